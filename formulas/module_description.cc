#include "formulas/module_description.h"

#include <array>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace torchscan::formulas {
namespace {

struct FamilyEntry {
  ModuleFamily family;
  absl::string_view name;
  // Index of the ModuleParams alternative the family reads.
  std::size_t params_index;
};

constexpr auto kFamilies = std::to_array<FamilyEntry>({
    {ModuleFamily::kUnsupported, "unsupported", 0},
    {ModuleFamily::kIdentity, "identity", 0},
    {ModuleFamily::kFlatten, "flatten", 0},
    {ModuleFamily::kLinear, "linear", 1},
    {ModuleFamily::kReLU, "relu", 2},
    {ModuleFamily::kELU, "elu", 2},
    {ModuleFamily::kLeakyReLU, "leaky_relu", 2},
    {ModuleFamily::kReLU6, "relu6", 2},
    {ModuleFamily::kTanh, "tanh", 0},
    {ModuleFamily::kSigmoid, "sigmoid", 0},
    {ModuleFamily::kConvTranspose, "conv_transpose", 3},
    {ModuleFamily::kConv, "conv", 3},
    {ModuleFamily::kBatchNorm, "batch_norm", 4},
    {ModuleFamily::kMaxPool, "max_pool", 5},
    {ModuleFamily::kAvgPool, "avg_pool", 5},
    {ModuleFamily::kAdaptiveMaxPool, "adaptive_max_pool", 0},
    {ModuleFamily::kAdaptiveAvgPool, "adaptive_avg_pool", 0},
    {ModuleFamily::kDropout, "dropout", 6},
    {ModuleFamily::kMultiheadAttention, "multihead_attention", 8},
    {ModuleFamily::kLayerNorm, "layer_norm", 7},
    {ModuleFamily::kTransformer, "transformer", 9},
});

// The table's indices must follow ModuleParams' alternatives.
static_assert(std::variant_size_v<ModuleParams> == 10);
static_assert(
    std::is_same_v<std::variant_alternative_t<1, ModuleParams>, LinearParams>);
static_assert(std::is_same_v<std::variant_alternative_t<2, ModuleParams>,
                             ActivationParams>);
static_assert(
    std::is_same_v<std::variant_alternative_t<3, ModuleParams>, ConvParams>);
static_assert(std::is_same_v<std::variant_alternative_t<4, ModuleParams>,
                             BatchNormParams>);
static_assert(
    std::is_same_v<std::variant_alternative_t<5, ModuleParams>, PoolParams>);
static_assert(
    std::is_same_v<std::variant_alternative_t<6, ModuleParams>, DropoutParams>);
static_assert(std::is_same_v<std::variant_alternative_t<7, ModuleParams>,
                             LayerNormParams>);
static_assert(std::is_same_v<std::variant_alternative_t<8, ModuleParams>,
                             MultiheadAttentionParams>);
static_assert(std::is_same_v<std::variant_alternative_t<9, ModuleParams>,
                             TransformerParams>);

constexpr absl::string_view kParamsNames[] = {
    "no hyper-parameters", "LinearParams",    "ActivationParams",
    "ConvParams",          "BatchNormParams", "PoolParams",
    "DropoutParams",       "LayerNormParams", "MultiheadAttentionParams",
    "TransformerParams"};

const FamilyEntry& EntryFor(ModuleFamily family) {
  for (const FamilyEntry& entry : kFamilies) {
    if (entry.family == family) return entry;
  }
  return kFamilies[0];
}

absl::string_view KindName(HyperParameter::Kind kind) {
  switch (kind) {
    case HyperParameter::Kind::kInt:
      return "an int";
    case HyperParameter::Kind::kTuple:
      return "a tuple";
    case HyperParameter::Kind::kString:
      return "a string";
  }
  return "?";
}

absl::Status CheckShape(const HyperParameter& value, absl::string_view name) {
  if (value.kind == HyperParameter::Kind::kInt && value.ints.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": an int hyper-parameter holds exactly one value"));
  }
  return absl::OkStatus();
}

// `allow_int`/`allow_string`: which kinds besides a tuple torch stores there.
absl::Status CheckKind(const HyperParameter& value, absl::string_view name,
                       bool allow_int, bool allow_string) {
  TS_RETURN_IF_ERROR(CheckShape(value, name));
  const bool ok = value.kind == HyperParameter::Kind::kTuple ||
                  (allow_int && value.kind == HyperParameter::Kind::kInt) ||
                  (allow_string && value.kind == HyperParameter::Kind::kString);
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      name, ": torch never stores ", KindName(value.kind), " here"));
}

}  // namespace

absl::string_view ModuleFamilyName(ModuleFamily family) {
  return EntryFor(family).name;
}

std::optional<ModuleFamily> ParseModuleFamily(absl::string_view name) {
  for (const FamilyEntry& entry : kFamilies) {
    if (entry.name == name) return entry.family;
  }
  return std::nullopt;
}

HyperParameter HyperParameter::Int(std::int64_t value) {
  HyperParameter parameter;
  parameter.kind = Kind::kInt;
  parameter.ints = {value};
  return parameter;
}

HyperParameter HyperParameter::Tuple(std::vector<std::int64_t> values) {
  HyperParameter parameter;
  parameter.kind = Kind::kTuple;
  parameter.ints = std::move(values);
  return parameter;
}

HyperParameter HyperParameter::String(std::string text) {
  HyperParameter parameter;
  parameter.kind = Kind::kString;
  parameter.ints.clear();
  parameter.text = std::move(text);
  return parameter;
}

absl::Status ValidateModuleDescription(const ModuleDescription& module) {
  const FamilyEntry& entry = EntryFor(module.family);
  if (module.params.index() != entry.params_index) {
    return absl::InvalidArgumentError(
        absl::StrCat("module ", module.type, " of family ", entry.name,
                     " needs ", kParamsNames[entry.params_index], ", got ",
                     kParamsNames[module.params.index()]));
  }
  if (module.parameter_count < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("module ", module.type, ": parameter_count is negative"));
  }
  if (const auto* conv = std::get_if<ConvParams>(&module.params)) {
    for (auto [value, name] : {std::pair{&conv->kernel_size, "kernel_size"},
                               std::pair{&conv->stride, "stride"},
                               std::pair{&conv->dilation, "dilation"}}) {
      TS_RETURN_IF_ERROR(CheckKind(*value, name, false, false));
    }
    return CheckKind(conv->padding, "padding", false, true);
  }
  if (const auto* pool = std::get_if<PoolParams>(&module.params)) {
    for (auto [value, name] : {std::pair{&pool->kernel_size, "kernel_size"},
                               std::pair{&pool->stride, "stride"},
                               std::pair{&pool->padding, "padding"}}) {
      TS_RETURN_IF_ERROR(CheckKind(*value, name, true, false));
    }
    if (pool->dilation)
      return CheckKind(*pool->dilation, "dilation", true, false);
  }
  return absl::OkStatus();
}

}  // namespace torchscan::formulas
