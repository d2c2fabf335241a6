#include "torchscan/script_module_description.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "torchscan/ivalue_metadata.h"
#include "torchscan/recover_from_graph.h"
#include "torchscan/tensor_identity.h"

namespace torchscan {
namespace {

using formulas::HyperParameter;
using formulas::ModuleFamily;
using formulas::ModuleParams;

// One module's constants (`__constants__`) and attributes, read by name.
class Attributes {
 public:
  explicit Attributes(const torch::jit::Module& module)
      : module_(module),
        type_(ShortClassName(module.type()->name()->qualifiedName())) {}

  // The constant or attribute `name`; else what the module's graph shows
  // of it (a traced module keeps no attributes: recover_from_graph.h);
  // else None.
  c10::IValue Get(const std::string& name) const {
    if (std::optional<c10::IValue> constant =
            module_.type()->findConstant(name)) {
      return *constant;
    }
    if (module_.hasattr(name)) return module_.attr(name);
    if (!recovered_) recovered_ = RecoverAttributes(module_);
    if (auto it = recovered_->find(name); it != recovered_->end()) {
      return it->second;
    }
    return c10::IValue();
  }

  absl::Status Expected(const std::string& name, absl::string_view what,
                        const c10::IValue& got) const {
    return absl::InvalidArgumentError(absl::StrCat(
        type_, ".", name, ": expected ", what, ", got ", got.tagKind()));
  }

  absl::StatusOr<std::int64_t> Int(const std::string& name) const {
    const c10::IValue value = Get(name);
    if (!value.isInt()) return Expected(name, "an int", value);
    return value.toInt();
  }

  absl::StatusOr<bool> Bool(const std::string& name) const {
    const c10::IValue value = Get(name);
    if (!value.isBool()) return Expected(name, "a bool", value);
    return value.toBool();
  }

  absl::StatusOr<double> Number(const std::string& name) const {
    const c10::IValue value = Get(name);
    if (value.isDouble()) return value.toDouble();
    if (value.isInt()) return static_cast<double>(value.toInt());
    return Expected(name, "a number", value);
  }

  // A number, or nullopt for None (BatchNorm's momentum).
  std::optional<double> NumberOrNone(const std::string& name) const {
    const c10::IValue value = Get(name);
    if (value.isDouble()) return value.toDouble();
    if (value.isInt()) return static_cast<double>(value.toInt());
    return std::nullopt;
  }

  absl::StatusOr<std::vector<std::int64_t>> Ints(
      const std::string& name) const {
    const c10::IValue value = Get(name);
    if (!value.isTuple() && !value.isList()) {
      return Expected(name, "a tuple of ints", value);
    }
    std::vector<std::int64_t> ints;
    for (const c10::IValue& item : value.isTuple()
                                       ? value.toTupleRef().elements().vec()
                                       : value.toListRef().vec()) {
      if (!item.isInt()) return Expected(name, "a tuple of ints", value);
      ints.push_back(item.toInt());
    }
    return ints;
  }

  // An int, a tuple of ints or a string, as stored.
  absl::StatusOr<HyperParameter> Hyper(const std::string& name) const {
    const c10::IValue value = Get(name);
    if (value.isInt()) return HyperParameter::Int(value.toInt());
    if (value.isString()) return HyperParameter::String(value.toStringRef());
    TS_ASSIGN_OR_RETURN(std::vector<std::int64_t> ints, Ints(name));
    return HyperParameter::Tuple(std::move(ints));
  }

  // The same, or nullopt when the module has no such attribute.
  absl::StatusOr<std::optional<HyperParameter>> OptionalHyper(
      const std::string& name) const {
    if (Get(name).isNone()) return std::optional<HyperParameter>();
    TS_ASSIGN_OR_RETURN(HyperParameter value, Hyper(name));
    return std::optional<HyperParameter>(std::move(value));
  }

  // Whether the tensor attribute `name` is set (`module.bias is not None`).
  bool HasTensor(const std::string& name) const {
    const c10::IValue value = Get(name);
    return value.isTensor() && value.toTensor().defined();
  }

  // numel of the tensor attribute `name`, or nullopt for None.
  std::optional<std::int64_t> TensorNumel(const std::string& name) const {
    const c10::IValue value = Get(name);
    if (!value.isTensor() || !value.toTensor().defined()) return std::nullopt;
    return value.toTensor().numel();
  }

 private:
  const torch::jit::Module& module_;
  std::string type_;
  // Computed on the first attribute the module lacks.
  mutable std::optional<std::map<std::string, c10::IValue>> recovered_;
};

absl::StatusOr<formulas::LinearParams> ReadLinear(
    const torch::jit::Module& module) {
  const Attributes attributes(module);
  formulas::LinearParams linear;
  TS_ASSIGN_OR_RETURN(linear.in_features, attributes.Int("in_features"));
  TS_ASSIGN_OR_RETURN(linear.out_features, attributes.Int("out_features"));
  linear.bias = attributes.HasTensor("bias");
  return linear;
}

absl::StatusOr<ModuleParams> ReadConv(const torch::jit::Module& module) {
  const Attributes attributes(module);
  formulas::ConvParams conv;
  TS_ASSIGN_OR_RETURN(conv.in_channels, attributes.Int("in_channels"));
  TS_ASSIGN_OR_RETURN(conv.kernel_size, attributes.Hyper("kernel_size"));
  TS_ASSIGN_OR_RETURN(conv.stride, attributes.Hyper("stride"));
  TS_ASSIGN_OR_RETURN(conv.padding, attributes.Hyper("padding"));
  TS_ASSIGN_OR_RETURN(conv.dilation, attributes.Hyper("dilation"));
  TS_ASSIGN_OR_RETURN(conv.groups, attributes.Int("groups"));
  conv.bias = attributes.HasTensor("bias");
  return conv;
}

// MaxPool has a dilation attribute, AvgPool none.
absl::StatusOr<ModuleParams> ReadPool(const torch::jit::Module& module) {
  const Attributes attributes(module);
  formulas::PoolParams pool;
  TS_ASSIGN_OR_RETURN(pool.kernel_size, attributes.Hyper("kernel_size"));
  TS_ASSIGN_OR_RETURN(pool.stride, attributes.Hyper("stride"));
  TS_ASSIGN_OR_RETURN(pool.padding, attributes.Hyper("padding"));
  TS_ASSIGN_OR_RETURN(pool.dilation, attributes.OptionalHyper("dilation"));
  return pool;
}

absl::StatusOr<ModuleParams> ReadBatchNorm(const torch::jit::Module& module) {
  const Attributes attributes(module);
  formulas::BatchNormParams bn;
  TS_ASSIGN_OR_RETURN(bn.num_features, attributes.Int("num_features"));
  TS_ASSIGN_OR_RETURN(bn.affine, attributes.Bool("affine"));
  TS_ASSIGN_OR_RETURN(bn.track_running_stats,
                      attributes.Bool("track_running_stats"));
  TS_ASSIGN_OR_RETURN(bn.training, attributes.Bool("training"));
  bn.momentum = attributes.NumberOrNone("momentum");
  bn.running_mean_numel = attributes.TensorNumel("running_mean");
  bn.running_var_numel = attributes.TensorNumel("running_var");
  bn.weight_numel = attributes.TensorNumel("weight");
  bn.bias_numel = attributes.TensorNumel("bias");
  return bn;
}

absl::StatusOr<ModuleParams> ReadDropout(const torch::jit::Module& module) {
  const Attributes attributes(module);
  formulas::DropoutParams dropout;
  TS_ASSIGN_OR_RETURN(dropout.p, attributes.Number("p"));
  TS_ASSIGN_OR_RETURN(dropout.inplace, attributes.Bool("inplace"));
  TS_ASSIGN_OR_RETURN(dropout.training, attributes.Bool("training"));
  return dropout;
}

absl::StatusOr<ModuleParams> ReadLayerNorm(const torch::jit::Module& module) {
  const Attributes attributes(module);
  formulas::LayerNormParams norm;
  TS_ASSIGN_OR_RETURN(norm.normalized_shape,
                      attributes.Ints("normalized_shape"));
  norm.weight = attributes.HasTensor("weight");
  norm.bias = attributes.HasTensor("bias");
  return norm;
}

absl::StatusOr<ModuleParams> ReadMultiheadAttention(
    const torch::jit::Module& module) {
  const Attributes attributes(module);
  formulas::MultiheadAttentionParams mha;
  TS_ASSIGN_OR_RETURN(mha.embed_dim, attributes.Int("embed_dim"));
  TS_ASSIGN_OR_RETURN(mha.num_heads, attributes.Int("num_heads"));
  TS_ASSIGN_OR_RETURN(mha.head_dim, attributes.Int("head_dim"));
  TS_ASSIGN_OR_RETURN(mha.batch_first, attributes.Bool("batch_first"));
  mha.in_proj_bias = attributes.HasTensor("in_proj_bias");
  mha.bias_k = attributes.HasTensor("bias_k");
  mha.bias_v = attributes.HasTensor("bias_v");
  TS_ASSIGN_OR_RETURN(mha.add_zero_attn, attributes.Bool("add_zero_attn"));
  TS_ASSIGN_OR_RETURN(mha.dropout, attributes.Number("dropout"));
  TS_ASSIGN_OR_RETURN(mha.training, attributes.Bool("training"));
  const c10::IValue out_proj = attributes.Get("out_proj");
  if (!out_proj.isModule()) {
    return attributes.Expected("out_proj", "a module", out_proj);
  }
  TS_ASSIGN_OR_RETURN(mha.out_proj, ReadLinear(out_proj.toModule()));
  return mha;
}

absl::StatusOr<ModuleParams> ReadActivation(const torch::jit::Module& module) {
  formulas::ActivationParams activation;
  TS_ASSIGN_OR_RETURN(activation.inplace, Attributes(module).Bool("inplace"));
  return activation;
}

absl::StatusOr<ModuleParams> ReadLinearModule(
    const torch::jit::Module& module) {
  TS_ASSIGN_OR_RETURN(formulas::LinearParams linear, ReadLinear(module));
  return linear;
}

struct Family {
  ModuleFamily family;
  // nullptr for the families whose formulas read no hyper-parameters.
  absl::StatusOr<ModuleParams> (*params)(const torch::jit::Module&) = nullptr;
};

const std::map<std::string, Family>& Families() {
  static const auto* families = new std::map<std::string, Family>{
      {"torch.nn.modules.linear.Identity", {ModuleFamily::kIdentity}},
      {"torch.nn.modules.flatten.Flatten", {ModuleFamily::kFlatten}},
      {"torch.nn.modules.linear.Linear",
       {ModuleFamily::kLinear, ReadLinearModule}},
      {"torch.nn.modules.linear.NonDynamicallyQuantizableLinear",
       {ModuleFamily::kLinear, ReadLinearModule}},
      {"torch.nn.modules.activation.ReLU",
       {ModuleFamily::kReLU, ReadActivation}},
      {"torch.nn.modules.activation.ELU", {ModuleFamily::kELU, ReadActivation}},
      {"torch.nn.modules.activation.LeakyReLU",
       {ModuleFamily::kLeakyReLU, ReadActivation}},
      {"torch.nn.modules.activation.ReLU6",
       {ModuleFamily::kReLU6, ReadActivation}},
      {"torch.nn.modules.activation.Tanh", {ModuleFamily::kTanh}},
      {"torch.nn.modules.activation.Sigmoid", {ModuleFamily::kSigmoid}},
      {"torch.nn.modules.conv.ConvTranspose1d",
       {ModuleFamily::kConvTranspose, ReadConv}},
      {"torch.nn.modules.conv.ConvTranspose2d",
       {ModuleFamily::kConvTranspose, ReadConv}},
      {"torch.nn.modules.conv.ConvTranspose3d",
       {ModuleFamily::kConvTranspose, ReadConv}},
      {"torch.nn.modules.conv.Conv1d", {ModuleFamily::kConv, ReadConv}},
      {"torch.nn.modules.conv.Conv2d", {ModuleFamily::kConv, ReadConv}},
      {"torch.nn.modules.conv.Conv3d", {ModuleFamily::kConv, ReadConv}},
      {"torch.nn.modules.batchnorm.BatchNorm1d",
       {ModuleFamily::kBatchNorm, ReadBatchNorm}},
      {"torch.nn.modules.batchnorm.BatchNorm2d",
       {ModuleFamily::kBatchNorm, ReadBatchNorm}},
      {"torch.nn.modules.batchnorm.BatchNorm3d",
       {ModuleFamily::kBatchNorm, ReadBatchNorm}},
      {"torch.nn.modules.batchnorm.SyncBatchNorm",
       {ModuleFamily::kBatchNorm, ReadBatchNorm}},
      {"torch.nn.modules.pooling.MaxPool1d",
       {ModuleFamily::kMaxPool, ReadPool}},
      {"torch.nn.modules.pooling.MaxPool2d",
       {ModuleFamily::kMaxPool, ReadPool}},
      {"torch.nn.modules.pooling.MaxPool3d",
       {ModuleFamily::kMaxPool, ReadPool}},
      {"torch.nn.modules.pooling.AvgPool1d",
       {ModuleFamily::kAvgPool, ReadPool}},
      {"torch.nn.modules.pooling.AvgPool2d",
       {ModuleFamily::kAvgPool, ReadPool}},
      {"torch.nn.modules.pooling.AvgPool3d",
       {ModuleFamily::kAvgPool, ReadPool}},
      {"torch.nn.modules.pooling.AdaptiveMaxPool1d",
       {ModuleFamily::kAdaptiveMaxPool}},
      {"torch.nn.modules.pooling.AdaptiveMaxPool2d",
       {ModuleFamily::kAdaptiveMaxPool}},
      {"torch.nn.modules.pooling.AdaptiveMaxPool3d",
       {ModuleFamily::kAdaptiveMaxPool}},
      {"torch.nn.modules.pooling.AdaptiveAvgPool1d",
       {ModuleFamily::kAdaptiveAvgPool}},
      {"torch.nn.modules.pooling.AdaptiveAvgPool2d",
       {ModuleFamily::kAdaptiveAvgPool}},
      {"torch.nn.modules.pooling.AdaptiveAvgPool3d",
       {ModuleFamily::kAdaptiveAvgPool}},
      {"torch.nn.modules.dropout.Dropout",
       {ModuleFamily::kDropout, ReadDropout}},
      {"torch.nn.modules.activation.MultiheadAttention",
       {ModuleFamily::kMultiheadAttention, ReadMultiheadAttention}},
      {"torch.nn.modules.normalization.LayerNorm",
       {ModuleFamily::kLayerNorm, ReadLayerNorm}},
  };
  return *families;
}

}  // namespace

absl::StatusOr<formulas::ModuleDescription> DescribeScriptModule(
    const torch::jit::Module& module) {
  const std::string qualified = module.type()->name()->qualifiedName();
  formulas::ModuleDescription description;
  description.type = ShortClassName(qualified);
  auto it = Families().find(DemangledClassName(qualified));
  if (it != Families().end()) {
    description.family = it->second.family;
    if (it->second.params != nullptr) {
      TS_ASSIGN_OR_RETURN(description.params, it->second.params(module));
    }
  }
  std::int64_t parameter_count = 0;
  SeenTensors seen;
  for (const auto& parameter : module.named_parameters(/*recurse=*/true)) {
    if (seen.Insert(parameter.value)) {
      parameter_count += parameter.value.numel();
    }
  }
  description.parameter_count = parameter_count;
  return description;
}

}  // namespace torchscan
