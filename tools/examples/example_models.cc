#include "tools/examples/example_models.h"

#include <ATen/Context.h>
#include <ATen/core/grad_mode.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/examples/script_modules.h"

namespace torchscan::examples {
namespace {

ExampleModel Mlp(ScriptModuleBuilder& b) {
  torch::jit::Module model =
      b.Sequential({b.Linear(784, 256), b.ReLU(), b.Linear(256, 64), b.ReLU(),
                    b.Linear(64, 10)});
  return {"mlp", "784-256-64-10 multilayer perceptron", model, {{784}}};
}

torch::jit::Module BasicBlock(ScriptModuleBuilder& b, std::int64_t in,
                              std::int64_t out, std::int64_t stride) {
  const bool downsample = stride != 1 || in != out;
  torch::jit::Module block = b.New("examples.BasicBlock");
  block.register_module("conv1",
                        b.Conv2d(in, out, 3, stride, 1, /*bias=*/false));
  block.register_module("bn1", b.BatchNorm2d(out));
  block.register_module("relu", b.ReLU(/*inplace=*/true));
  block.register_module("conv2", b.Conv2d(out, out, 3, 1, 1, /*bias=*/false));
  block.register_module("bn2", b.BatchNorm2d(out));
  if (downsample) {
    block.register_module("downsample",
                          b.Sequential({b.Conv2d(in, out, 1, stride, 0, false),
                                        b.BatchNorm2d(out)}));
  }
  block.define(absl::StrCat(R"(
def forward(self, x: Tensor) -> Tensor:
    identity = )",
                            downsample ? "self.downsample.forward(x)" : "x", R"(
    out = self.relu.forward(self.bn1.forward(self.conv1.forward(x)))
    out = self.bn2.forward(self.conv2.forward(out))
    return self.relu.forward(out + identity)
)"));
  return block;
}

ExampleModel ResNet18(ScriptModuleBuilder& b) {
  torch::jit::Module model = b.New("examples.ResNet18");
  model.register_module("conv1", b.Conv2d(3, 64, 7, 2, 3, /*bias=*/false));
  model.register_module("bn1", b.BatchNorm2d(64));
  model.register_module("relu", b.ReLU(/*inplace=*/true));
  model.register_module("maxpool", b.MaxPool2d(3, 2, 1));
  std::int64_t in = 64;
  const std::int64_t widths[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    const std::int64_t out = widths[stage];
    model.register_module(
        absl::StrCat("layer", stage + 1),
        b.Sequential({BasicBlock(b, in, out, stage == 0 ? 1 : 2),
                      BasicBlock(b, out, out, 1)}));
    in = out;
  }
  model.register_module("avgpool", b.AdaptiveAvgPool2d(1));
  model.register_module("fc", b.Linear(512, 1000));
  model.define(R"(
def forward(self, x: Tensor) -> Tensor:
    x = self.maxpool.forward(self.relu.forward(self.bn1.forward(self.conv1.forward(x))))
    x = self.layer4.forward(self.layer3.forward(self.layer2.forward(self.layer1.forward(x))))
    return self.fc.forward(torch.flatten(self.avgpool.forward(x), 1))
)");
  return {"resnet18",
          "ResNet-18 (torchvision's layout), 224x224 RGB input",
          model,
          {{3, 224, 224}}};
}

torch::jit::Module EncoderBlock(ScriptModuleBuilder& b, std::int64_t width,
                                std::int64_t heads) {
  torch::jit::Module block = b.New("examples.EncoderBlock");
  block.register_module("norm1", b.LayerNorm(width));
  block.register_module("qkv", b.Linear(width, 3 * width));
  block.register_module("proj", b.Linear(width, width));
  block.register_module("norm2", b.LayerNorm(width));
  block.register_module("fc1", b.Linear(width, 4 * width));
  block.register_module("act", b.GELU());
  block.register_module("fc2", b.Linear(4 * width, width));
  block.register_module("dropout", b.Dropout(0.1));
  block.register_attribute("heads", c10::IntType::get(), heads);
  block.define(R"(
def forward(self, x: Tensor) -> Tensor:
    b = x.size(0)
    s = x.size(1)
    d = x.size(2)
    qkv = self.qkv.forward(self.norm1.forward(x)).reshape(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
    attention = torch.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])
    x = x + self.dropout.forward(self.proj.forward(attention.transpose(1, 2).reshape(b, s, d)))
    return x + self.dropout.forward(self.fc2.forward(self.act.forward(self.fc1.forward(self.norm2.forward(x)))))
)");
  return block;
}

ExampleModel TransformerEncoder(ScriptModuleBuilder& b) {
  const std::int64_t width = 128, heads = 4;
  torch::jit::Module model = b.New("examples.TransformerEncoder");
  model.register_module("blocks",
                        b.Sequential({EncoderBlock(b, width, heads),
                                      EncoderBlock(b, width, heads)}));
  model.register_module("norm", b.LayerNorm(width));
  model.define(R"(
def forward(self, x: Tensor) -> Tensor:
    return self.norm.forward(self.blocks.forward(x))
)");
  return {"transformer_encoder",
          "2-layer pre-norm transformer encoder, width 128, 64 tokens",
          model,
          {{64, 128}}};
}

}  // namespace

std::vector<std::string> ExampleNames() {
  return {"mlp", "resnet18", "transformer_encoder"};
}

absl::StatusOr<ExampleModel> MakeExample(const std::string& name) {
  at::manual_seed(0);
  at::NoGradGuard no_grad;
  ScriptModuleBuilder builder;
  if (name == "mlp") return Mlp(builder);
  if (name == "resnet18") return ResNet18(builder);
  if (name == "transformer_encoder") return TransformerEncoder(builder);
  return absl::NotFoundError(
      absl::StrCat("unknown example '", name,
                   "'; choose one of: ", absl::StrJoin(ExampleNames(), ", ")));
}

}  // namespace torchscan::examples
