#include "tools/examples/script_modules.h"

#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>
#include <torch/csrc/jit/api/compilation_unit.h>

#include <cmath>

#include "absl/strings/str_cat.h"

namespace torchscan::examples {
namespace {

c10::IValue IntPair(std::int64_t value) {
  return c10::ivalue::Tuple::create({value, value});
}

// Python's scripted torch.nn modules keep hyper-parameters as class
// constants; TorchScript compiled from C++ cannot read constants, so these
// are attributes. The crawler reads either.
void Constant(torch::jit::Module& module, const std::string& name,
              c10::IValue value) {
  c10::TypePtr type;
  if (value.isTuple()) {
    std::vector<c10::TypePtr> items(value.toTupleRef().elements().size(),
                                    c10::IntType::get());
    type = c10::TupleType::create(std::move(items));
  } else {
    type = value.type();
  }
  module.register_attribute(name, type, std::move(value));
}

at::Tensor Uniform(std::vector<std::int64_t> shape, std::int64_t fan_in) {
  return at::randn(shape).mul(1.0 / std::sqrt(static_cast<double>(fan_in)));
}

// Parameters are trainable, as torch.nn creates them.
at::Tensor Trainable(at::Tensor tensor) {
  tensor.set_requires_grad(true);
  return tensor;
}

// A zero-initialised `bias` parameter, or a None attribute of type
// Optional[Tensor] as torch.jit.script leaves it for bias=False.
void OptionalBias(torch::jit::Module& m, bool bias, std::int64_t out) {
  if (bias) {
    m.register_parameter("bias", Trainable(at::zeros({out})),
                         /*is_buffer=*/false);
  } else {
    m.register_attribute("bias",
                         c10::OptionalType::create(c10::TensorType::get()),
                         c10::IValue());
  }
}

}  // namespace

ScriptModuleBuilder::ScriptModuleBuilder()
    : unit_(std::make_shared<torch::jit::CompilationUnit>()) {}

torch::jit::Module ScriptModuleBuilder::New(const std::string& qualified_name) {
  torch::jit::Module module(
      c10::QualifiedName(absl::StrCat("__torch__.", qualified_name)), unit_,
      /*shouldMangle=*/true);
  // Every scripted torch.nn module has it; train()/eval() set it.
  module.register_attribute("training", c10::BoolType::get(), true);
  return module;
}

torch::jit::Module ScriptModuleBuilder::Linear(std::int64_t in,
                                               std::int64_t out, bool bias) {
  torch::jit::Module m = New("torch.nn.modules.linear.Linear");
  Constant(m, "in_features", in);
  Constant(m, "out_features", out);
  m.register_parameter("weight", Trainable(Uniform({out, in}, in)),
                       /*is_buffer=*/false);
  OptionalBias(m, bias, out);
  m.define(R"(
def forward(self, input: Tensor) -> Tensor:
    return torch.linear(input, self.weight, self.bias)
)");
  return m;
}

torch::jit::Module ScriptModuleBuilder::Conv2d(
    std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride,
    std::int64_t padding, bool bias, std::int64_t groups) {
  torch::jit::Module m = New("torch.nn.modules.conv.Conv2d");
  Constant(m, "in_channels", in);
  Constant(m, "out_channels", out);
  Constant(m, "kernel_size", IntPair(kernel));
  Constant(m, "stride", IntPair(stride));
  Constant(m, "padding", IntPair(padding));
  Constant(m, "dilation", IntPair(1));
  Constant(m, "groups", groups);
  m.register_parameter("weight",
                       Trainable(Uniform({out, in / groups, kernel, kernel},
                                         in * kernel * kernel)),
                       false);
  OptionalBias(m, bias, out);
  m.define(R"(
def forward(self, input: Tensor) -> Tensor:
    return torch.conv2d(input, self.weight, self.bias, [self.stride[0], self.stride[1]], [self.padding[0], self.padding[1]], [self.dilation[0], self.dilation[1]], self.groups)
)");
  return m;
}

torch::jit::Module ScriptModuleBuilder::BatchNorm2d(std::int64_t features) {
  torch::jit::Module m = New("torch.nn.modules.batchnorm.BatchNorm2d");
  Constant(m, "num_features", features);
  Constant(m, "affine", true);
  Constant(m, "track_running_stats", true);
  Constant(m, "eps", 1e-5);
  m.register_attribute("momentum",
                       c10::OptionalType::create(c10::FloatType::get()), 0.1);
  m.register_parameter("weight", Trainable(at::ones({features})), false);
  m.register_parameter("bias", Trainable(at::zeros({features})), false);
  m.register_buffer("running_mean", at::zeros({features}));
  m.register_buffer("running_var", at::ones({features}));
  m.register_buffer("num_batches_tracked", at::zeros({}, at::kLong));
  m.define(R"(
def forward(self, input: Tensor) -> Tensor:
    return torch.batch_norm(input, self.weight, self.bias, self.running_mean, self.running_var, self.training, 0.1, self.eps, False)
)");
  return m;
}

torch::jit::Module ScriptModuleBuilder::LayerNorm(std::int64_t features) {
  torch::jit::Module m = New("torch.nn.modules.normalization.LayerNorm");
  Constant(m, "normalized_shape", c10::ivalue::Tuple::create({features}));
  Constant(m, "eps", 1e-5);
  Constant(m, "elementwise_affine", true);
  m.register_parameter("weight", Trainable(at::ones({features})), false);
  m.register_parameter("bias", Trainable(at::zeros({features})), false);
  m.define(R"(
def forward(self, input: Tensor) -> Tensor:
    return torch.layer_norm(input, [self.normalized_shape[0]], self.weight, self.bias, self.eps)
)");
  return m;
}

torch::jit::Module ScriptModuleBuilder::ReLU(bool inplace) {
  torch::jit::Module m = New("torch.nn.modules.activation.ReLU");
  Constant(m, "inplace", inplace);
  m.define(R"(
def forward(self, input: Tensor) -> Tensor:
    return torch.relu(input)
)");
  return m;
}

torch::jit::Module ScriptModuleBuilder::GELU() {
  torch::jit::Module m = New("torch.nn.modules.activation.GELU");
  m.define(R"(
def forward(self, input: Tensor) -> Tensor:
    return torch.gelu(input)
)");
  return m;
}

torch::jit::Module ScriptModuleBuilder::Dropout(double p) {
  torch::jit::Module m = New("torch.nn.modules.dropout.Dropout");
  Constant(m, "p", p);
  Constant(m, "inplace", false);
  m.define(R"(
def forward(self, input: Tensor) -> Tensor:
    return torch.dropout(input, self.p, self.training)
)");
  return m;
}

torch::jit::Module ScriptModuleBuilder::MaxPool2d(std::int64_t kernel,
                                                  std::int64_t stride,
                                                  std::int64_t padding) {
  torch::jit::Module m = New("torch.nn.modules.pooling.MaxPool2d");
  Constant(m, "kernel_size", kernel);
  Constant(m, "stride", stride);
  Constant(m, "padding", padding);
  Constant(m, "dilation", 1);
  Constant(m, "ceil_mode", false);
  m.define(R"(
def forward(self, input: Tensor) -> Tensor:
    return torch.max_pool2d(input, [self.kernel_size, self.kernel_size], [self.stride, self.stride], [self.padding, self.padding], [self.dilation, self.dilation], self.ceil_mode)
)");
  return m;
}

torch::jit::Module ScriptModuleBuilder::AdaptiveAvgPool2d(std::int64_t size) {
  torch::jit::Module m = New("torch.nn.modules.pooling.AdaptiveAvgPool2d");
  Constant(m, "output_size", IntPair(size));
  m.define(R"(
def forward(self, input: Tensor) -> Tensor:
    return torch.adaptive_avg_pool2d(input, [self.output_size[0], self.output_size[1]])
)");
  return m;
}

torch::jit::Module ScriptModuleBuilder::Flatten() {
  torch::jit::Module m = New("torch.nn.modules.flatten.Flatten");
  Constant(m, "start_dim", 1);
  Constant(m, "end_dim", -1);
  m.define(R"(
def forward(self, input: Tensor) -> Tensor:
    return torch.flatten(input, self.start_dim, self.end_dim)
)");
  return m;
}

torch::jit::Module ScriptModuleBuilder::Sequential(
    const std::vector<torch::jit::Module>& children) {
  torch::jit::Module m = New("torch.nn.modules.container.Sequential");
  std::string body = "def forward(self, input: Tensor) -> Tensor:\n";
  for (std::size_t i = 0; i < children.size(); ++i) {
    m.register_module(std::to_string(i), children[i]);
    absl::StrAppend(&body, "    input = getattr(self, \"", i,
                    "\").forward(input)\n");
  }
  absl::StrAppend(&body, "    return input\n");
  m.define(body);
  return m;
}

}  // namespace torchscan::examples
