#include "torchscan/script_module_description.h"

#include <functional>
#include <map>
#include <optional>
#include <unordered_set>

#include "torchscan/ivalue_metadata.h"

namespace torchscan {
namespace {

using report::Json;

// A module constant (`__constants__`) or attribute, whichever it has.
std::optional<c10::IValue> Lookup(const torch::jit::Module& module,
                                  const std::string& name) {
  if (std::optional<c10::IValue> constant = module.type()->findConstant(name)) {
    return constant;
  }
  if (module.hasattr(name)) return module.attr(name);
  return std::nullopt;
}

// The stored form: ints stay ints, tuples and lists become arrays, strings
// stay strings (conv padding "same"), floats floats, bools bools.
Json Raw(const c10::IValue& value) {
  if (value.isNone()) return nullptr;
  if (value.isBool()) return value.toBool();
  if (value.isInt()) return value.toInt();
  if (value.isDouble()) return value.toDouble();
  if (value.isString()) return value.toStringRef();
  if (value.isTuple() || value.isList()) {
    Json items = Json::array();
    const auto& elements = value.isTuple() ? value.toTupleRef().elements().vec()
                                           : value.toListRef().vec();
    for (const c10::IValue& item : elements) items.push_back(Raw(item));
    return items;
  }
  return nullptr;
}

Json Field(const torch::jit::Module& module, const std::string& name) {
  std::optional<c10::IValue> value = Lookup(module, name);
  return value ? Raw(*value) : Json();
}

bool TensorPresent(const torch::jit::Module& module, const std::string& name) {
  std::optional<c10::IValue> value = Lookup(module, name);
  return value && value->isTensor() && value->toTensor().defined();
}

Json TensorNumel(const torch::jit::Module& module, const std::string& name) {
  std::optional<c10::IValue> value = Lookup(module, name);
  if (!value || !value->isTensor() || !value->toTensor().defined())
    return nullptr;
  return value->toTensor().numel();
}

void Copy(const torch::jit::Module& module, Json& into,
          std::initializer_list<const char*> names) {
  for (const char* name : names) into[name] = Field(module, name);
}

Json LinearParams(const torch::jit::Module& module) {
  Json params = Json::object();
  Copy(module, params, {"in_features", "out_features"});
  params["bias"] = TensorPresent(module, "bias");
  return params;
}

Json ConvParams(const torch::jit::Module& module) {
  Json params = Json::object();
  Copy(module, params,
       {"in_channels", "kernel_size", "stride", "padding", "dilation",
        "groups"});
  params["bias"] = TensorPresent(module, "bias");
  return params;
}

Json PoolParams(const torch::jit::Module& module, bool has_dilation) {
  Json params = Json::object();
  Copy(module, params, {"kernel_size", "stride", "padding"});
  if (has_dilation) params["dilation"] = Field(module, "dilation");
  return params;
}

Json BatchNormParams(const torch::jit::Module& module) {
  Json params = Json::object();
  Copy(module, params,
       {"num_features", "affine", "track_running_stats", "training"});
  Json momentum = Field(module, "momentum");
  params["momentum"] =
      momentum.is_number() ? Json(momentum.get<double>()) : Json();
  params["running_mean_numel"] = TensorNumel(module, "running_mean");
  params["running_var_numel"] = TensorNumel(module, "running_var");
  params["weight_numel"] = TensorNumel(module, "weight");
  params["bias_numel"] = TensorNumel(module, "bias");
  return params;
}

Json DropoutParams(const torch::jit::Module& module) {
  Json params = Json::object();
  Json p = Field(module, "p");
  params["p"] = p.is_number() ? Json(p.get<double>()) : p;
  Copy(module, params, {"inplace", "training"});
  return params;
}

Json LayerNormParams(const torch::jit::Module& module) {
  Json params = Json::object();
  params["normalized_shape"] = Field(module, "normalized_shape");
  params["weight"] = TensorPresent(module, "weight");
  params["bias"] = TensorPresent(module, "bias");
  return params;
}

Json MultiheadAttentionParams(const torch::jit::Module& module) {
  Json params = Json::object();
  Copy(module, params, {"embed_dim", "num_heads", "head_dim", "batch_first"});
  params["in_proj_bias"] = TensorPresent(module, "in_proj_bias");
  params["bias_k"] = TensorPresent(module, "bias_k");
  params["bias_v"] = TensorPresent(module, "bias_v");
  params["add_zero_attn"] = Field(module, "add_zero_attn");
  Json dropout = Field(module, "dropout");
  params["dropout"] =
      dropout.is_number() ? Json(dropout.get<double>()) : dropout;
  params["training"] = Field(module, "training");
  params["out_proj"] =
      module.hasattr("out_proj") && module.attr("out_proj").isModule()
          ? LinearParams(module.attr("out_proj").toModule())
          : Json();
  return params;
}

Json InplaceParams(const torch::jit::Module& module) {
  Json params = Json::object();
  params["inplace"] = Field(module, "inplace");
  return params;
}

struct Family {
  const char* name;
  std::function<Json(const torch::jit::Module&)> params;
};

const std::map<std::string, Family>& Families() {
  static const auto* families = new std::map<std::string, Family>{
      {"torch.nn.modules.linear.Identity", {"identity", nullptr}},
      {"torch.nn.modules.flatten.Flatten", {"flatten", nullptr}},
      {"torch.nn.modules.linear.Linear", {"linear", LinearParams}},
      {"torch.nn.modules.linear.NonDynamicallyQuantizableLinear",
       {"linear", LinearParams}},
      {"torch.nn.modules.activation.ReLU", {"relu", InplaceParams}},
      {"torch.nn.modules.activation.ELU", {"elu", InplaceParams}},
      {"torch.nn.modules.activation.LeakyReLU", {"leaky_relu", InplaceParams}},
      {"torch.nn.modules.activation.ReLU6", {"relu6", InplaceParams}},
      {"torch.nn.modules.activation.Tanh", {"tanh", nullptr}},
      {"torch.nn.modules.activation.Sigmoid", {"sigmoid", nullptr}},
      {"torch.nn.modules.conv.ConvTranspose1d", {"conv_transpose", ConvParams}},
      {"torch.nn.modules.conv.ConvTranspose2d", {"conv_transpose", ConvParams}},
      {"torch.nn.modules.conv.ConvTranspose3d", {"conv_transpose", ConvParams}},
      {"torch.nn.modules.conv.Conv1d", {"conv", ConvParams}},
      {"torch.nn.modules.conv.Conv2d", {"conv", ConvParams}},
      {"torch.nn.modules.conv.Conv3d", {"conv", ConvParams}},
      {"torch.nn.modules.batchnorm.BatchNorm1d",
       {"batch_norm", BatchNormParams}},
      {"torch.nn.modules.batchnorm.BatchNorm2d",
       {"batch_norm", BatchNormParams}},
      {"torch.nn.modules.batchnorm.BatchNorm3d",
       {"batch_norm", BatchNormParams}},
      {"torch.nn.modules.batchnorm.SyncBatchNorm",
       {"batch_norm", BatchNormParams}},
      {"torch.nn.modules.pooling.MaxPool1d",
       {"max_pool", [](auto& m) { return PoolParams(m, true); }}},
      {"torch.nn.modules.pooling.MaxPool2d",
       {"max_pool", [](auto& m) { return PoolParams(m, true); }}},
      {"torch.nn.modules.pooling.MaxPool3d",
       {"max_pool", [](auto& m) { return PoolParams(m, true); }}},
      {"torch.nn.modules.pooling.AvgPool1d",
       {"avg_pool", [](auto& m) { return PoolParams(m, false); }}},
      {"torch.nn.modules.pooling.AvgPool2d",
       {"avg_pool", [](auto& m) { return PoolParams(m, false); }}},
      {"torch.nn.modules.pooling.AvgPool3d",
       {"avg_pool", [](auto& m) { return PoolParams(m, false); }}},
      {"torch.nn.modules.pooling.AdaptiveMaxPool1d",
       {"adaptive_max_pool", nullptr}},
      {"torch.nn.modules.pooling.AdaptiveMaxPool2d",
       {"adaptive_max_pool", nullptr}},
      {"torch.nn.modules.pooling.AdaptiveMaxPool3d",
       {"adaptive_max_pool", nullptr}},
      {"torch.nn.modules.pooling.AdaptiveAvgPool1d",
       {"adaptive_avg_pool", nullptr}},
      {"torch.nn.modules.pooling.AdaptiveAvgPool2d",
       {"adaptive_avg_pool", nullptr}},
      {"torch.nn.modules.pooling.AdaptiveAvgPool3d",
       {"adaptive_avg_pool", nullptr}},
      {"torch.nn.modules.dropout.Dropout", {"dropout", DropoutParams}},
      {"torch.nn.modules.activation.MultiheadAttention",
       {"multihead_attention", MultiheadAttentionParams}},
      {"torch.nn.modules.normalization.LayerNorm",
       {"layer_norm", LayerNormParams}},
  };
  return *families;
}

}  // namespace

std::string ScriptModuleFamily(const std::string& demangled_class_name) {
  auto it = Families().find(demangled_class_name);
  return it == Families().end() ? "unsupported" : it->second.name;
}

Json DescribeScriptModule(const torch::jit::Module& module) {
  const std::string qualified = module.type()->name()->qualifiedName();
  Json description = Json::object();
  description["type"] = ShortClassName(qualified);
  auto it = Families().find(DemangledClassName(qualified));
  if (it == Families().end()) {
    description["family"] = "unsupported";
  } else {
    description["family"] = it->second.name;
    if (it->second.params) {
      const Json params = it->second.params(module);
      for (const auto& [key, value] : params.items()) description[key] = value;
    }
  }
  std::int64_t parameter_count = 0;
  std::unordered_set<const void*> seen;
  for (const auto& parameter : module.named_parameters(/*recurse=*/true)) {
    if (seen.insert(parameter.value.unsafeGetTensorImpl()).second) {
      parameter_count += parameter.value.numel();
    }
  }
  description["parameter_count"] = parameter_count;
  return description;
}

}  // namespace torchscan
