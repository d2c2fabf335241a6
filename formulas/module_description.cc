#include "formulas/module_description.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

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

namespace {

// The JSON of an int or a tuple.
report::Json HyperJson(const HyperParameter& value) {
  if (value.kind == HyperParameter::Kind::kString) return value.text;
  if (value.kind == HyperParameter::Kind::kInt) {
    return value.ints.empty() ? 0 : value.ints[0];
  }
  return value.ints;
}

// An int, a tuple or, when allowed, a string.
absl::StatusOr<HyperParameter> ReadHyper(const report::JsonValue& node,
                                         bool allow_string) {
  if (node.node().is_string() && allow_string) {
    return HyperParameter::String(node.node().get<std::string>());
  }
  if (node.node().is_array()) {
    TS_ASSIGN_OR_RETURN(std::vector<std::int64_t> values,
                        IntArrayCodec<false>::Read(node));
    return HyperParameter::Tuple(std::move(values));
  }
  if (report::IsJsonInteger(node.node())) {
    TS_ASSIGN_OR_RETURN(std::int64_t value, node.Int64());
    return HyperParameter::Int(value);
  }
  return node.Expected(allow_string
                           ? "an integer, an array of integers or a string"
                           : "an integer or an array of integers");
}

}  // namespace

report::Json HyperCodec::Write(const HyperParameter& value) {
  return HyperJson(value);
}

absl::StatusOr<HyperParameter> HyperCodec::Read(const report::JsonValue& node) {
  return ReadHyper(node, /*allow_string=*/false);
}

report::Json HyperOrStringCodec::Write(const HyperParameter& value) {
  return HyperJson(value);
}

absl::StatusOr<HyperParameter> HyperOrStringCodec::Read(
    const report::JsonValue& node) {
  return ReadHyper(node, /*allow_string=*/true);
}

report::Json HyperOrNullCodec::Write(const HyperParameter& value) {
  return HyperJson(value);
}

absl::StatusOr<std::optional<HyperParameter>> HyperOrNullCodec::Read(
    const report::JsonValue& node) {
  if (node.is_null()) return std::optional<HyperParameter>();
  TS_ASSIGN_OR_RETURN(HyperParameter value,
                      ReadHyper(node, /*allow_string=*/false));
  return std::optional<HyperParameter>(std::move(value));
}

template <bool kNonNegative>
absl::StatusOr<std::vector<std::int64_t>> IntArrayCodec<kNonNegative>::Read(
    const report::JsonValue& node) {
  if (!node.node().is_array()) return node.Expected("an array of integers");
  TS_ASSIGN_OR_RETURN(report::JsonArray items, node.Array());
  std::vector<std::int64_t> values;
  values.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    const report::JsonValue item = items.Item(i);
    TS_ASSIGN_OR_RETURN(std::int64_t value, item.Int64());
    if (kNonNegative && value < 0) return item.Error("must not be negative");
    values.push_back(value);
  }
  return values;
}

template struct IntArrayCodec<false>;
template struct IntArrayCodec<true>;

absl::StatusOr<double> NumberOrNullCodec::Read(const report::JsonValue& node) {
  if (!node.node().is_number()) return node.Expected("a number or null");
  return node.node().get<double>();
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
