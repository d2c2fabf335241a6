#include "formulas/module_families.h"

#include <cstddef>
#include <iterator>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "base/status_macros.h"
#include "formulas/attention_module_flops.h"
#include "formulas/module_family_formulas.h"
#include "formulas/module_formula_support.h"
#include "report/field_table.h"

namespace torchscan::formulas {
namespace {

using module_internal::AdaptivePoolDmas;
using module_internal::AdaptivePoolField;
using module_internal::AdaptivePoolFlops;
using module_internal::AdaptivePoolMacs;
using module_internal::AvgPoolFlops;
using module_internal::AvgPoolMacs;
using module_internal::BatchNormDmas;
using module_internal::BatchNormFlops;
using module_internal::BatchNormMacs;
using module_internal::ConvDmas;
using module_internal::ConvFlops;
using module_internal::ConvMacs;
using module_internal::ConvTransposeDmas;
using module_internal::ConvTransposeField;
using module_internal::ConvTransposeFlops;
using module_internal::ConvTransposeMacs;
using module_internal::DropoutFlops;
using module_internal::ElementwiseFlops;
using module_internal::IdentityField;
using module_internal::KernelField;
using module_internal::LayerNormFlops;
using module_internal::LinearDmas;
using module_internal::LinearFlops;
using module_internal::LinearMacs;
using module_internal::MaxPoolFlops;
using module_internal::MaxPoolMacs;
using module_internal::MultiheadAttentionFlops;
using module_internal::ParamsOf;
using module_internal::PoolDmas;
using module_internal::ReadWriteDmas;
using module_internal::TransformerFlops;
using python::Py;

// The reader of a description's hyper-parameters of type Params: the rows
// of its table, in the description's own object (module_json.h).
template <typename Params>
absl::StatusOr<ModuleParams> Reads(const report::JsonObject& object) {
  TS_ASSIGN_OR_RETURN(Params params, report::ReadFieldsIn<Params>(object));
  return ModuleParams(std::move(params));
}

template <typename>
struct MemberOf;
template <typename Class, typename Type>
struct MemberOf<Type Class::*> {
  using ParamsType = Class;
  using ValueType = Type;
};

template <auto kMember>
void StoreMember(ModuleParams& params, AttributeValue value) {
  using Member = MemberOf<decltype(kMember)>;
  using ParamsType = typename Member::ParamsType;
  if (!std::holds_alternative<ParamsType>(params)) params = ParamsType{};
  std::get<ParamsType>(params).*kMember =
      std::get<typename Member::ValueType>(std::move(value));
}

// The JSON key of `field` when it is the row of kMember, else nullptr.
template <auto kMember, typename FieldRow>
constexpr const char* KeyIfRowOf(const FieldRow& field) {
  if constexpr (requires { field.member; }) {
    if constexpr (std::is_same_v<decltype(field.member), decltype(kMember)>) {
      return field.member == kMember ? field.name : nullptr;
    }
  }
  return nullptr;
}

// The JSON key of kMember in its params struct's field table.
template <auto kMember>
constexpr const char* FieldKeyOf() {
  using ParamsType = typename MemberOf<decltype(kMember)>::ParamsType;
  const char* key = nullptr;
  std::apply(
      [&key](const auto&... field) {
        ((key = key != nullptr ? key : KeyIfRowOf<kMember>(field)), ...);
      },
      ParamsType::kFields);
  return key;
}

// The attribute `name` of kind `kKind`, stored in `kMember`; the member's
// type must be the kind's value type, and its params' field table must
// declare it.
template <AttributeKind kKind, auto kMember>
constexpr ModuleAttribute Attr(const char* name) {
  static_assert(
      std::is_same_v<
          typename MemberOf<decltype(kMember)>::ValueType,
          std::variant_alternative_t<AlternativeOf(kKind), AttributeValue>>,
      "the member's type is not the attribute kind's value type");
  constexpr const char* kKey = FieldKeyOf<kMember>();
  static_assert(kKey != nullptr, "the params' field table lacks the member");
  return {
      .name = name, .kind = kKind, .key = kKey, .store = StoreMember<kMember>};
}

using enum AttributeKind;

template <typename T>
const T& Params(const FormulaArgs& args) {
  return ParamsOf<T>(args.module);
}

// Upstream's formula exists and counts nothing.
Py<ExactCount> NoCount(const FormulaArgs&) { return ExactCount(0); }

Py<ReceptiveField> KeepsPositions(const FormulaArgs&) {
  return IdentityField();
}

// Conv and pools share upstream's kernel formula; AvgPool has no dilation.
Py<ReceptiveField> ConvField(const FormulaArgs& args) {
  const ConvParams& conv = Params<ConvParams>(args);
  return KernelField(conv.kernel_size, &conv.dilation, conv.stride,
                     conv.padding);
}

Py<ReceptiveField> PoolField(const FormulaArgs& args) {
  const PoolParams& pool = Params<PoolParams>(args);
  return KernelField(pool.kernel_size,
                     pool.dilation ? &*pool.dilation : nullptr, pool.stride,
                     pool.padding);
}

// ReLU, ReLU6, ELU and LeakyReLU read `inplace`; `extra` is one access for
// alpha or the negative slope.
template <int kExtra>
Py<ExactCount> ActivationDmas(const FormulaArgs& args) {
  return ReadWriteDmas(args.inp, args.out, 1, kExtra,
                       Params<ActivationParams>(args).inplace);
}

template <int kFactor>
Py<ExactCount> ElementwiseModuleFlops(const FormulaArgs& args) {
  return ElementwiseFlops(args.inputs, kFactor);
}

// NOTE: one row per family, in ModuleFamily's order (checked below), which
// is upstream's describe order (TorchScan 0.2's FLOPs isinstance checks,
// which Python's describe_module and the native description follow). The
// families are disjoint for torch's classes, so upstream's per-metric
// isinstance order does not matter once a front end has picked the family.
// The attributes of _ConvNd, which both convolution rows read.
constexpr std::array<ModuleAttribute, kMaxModuleAttributes> kConvAttributes = {
    Attr<kInt, &ConvParams::in_channels>("in_channels"),
    Attr<kHyper, &ConvParams::kernel_size>("kernel_size"),
    Attr<kHyper, &ConvParams::stride>("stride"),
    Attr<kHyperOrString, &ConvParams::padding>("padding"),
    Attr<kHyper, &ConvParams::dilation>("dilation"),
    Attr<kInt, &ConvParams::groups>("groups"),
    Attr<kIsNotNone, &ConvParams::bias>("bias"),
};

constexpr ModuleFamilyRow kRows[] = {
    {.family = ModuleFamily::kUnsupported},
    {
        .family = ModuleFamily::kIdentity,
        .torch_class = "torch.nn.modules.linear.Identity",
        .flops = NoCount,
        .macs = NoCount,
        .dmas =
            [](const FormulaArgs& a) {
              return ReadWriteDmas(a.inp, a.out, 1, 0, /*inplace=*/true);
            },
        .receptive_field = KeepsPositions,
    },
    {
        .family = ModuleFamily::kFlatten,
        .torch_class = "torch.nn.modules.flatten.Flatten",
        .flops = NoCount,
        .macs = NoCount,
        .dmas =
            [](const FormulaArgs& a) {
              return ReadWriteDmas(a.inp, a.out, 2, 0, /*inplace=*/true);
            },
        .receptive_field = KeepsPositions,
    },
    {
        .family = ModuleFamily::kLinear,
        .torch_class = "torch.nn.modules.linear.Linear",
        .script_classes = {"torch.nn.modules.linear."
                           "NonDynamicallyQuantizableLinear"},
        .read_params = Reads<LinearParams>,
        .attributes =
            {
                Attr<kInt, &LinearParams::in_features>("in_features"),
                Attr<kInt, &LinearParams::out_features>("out_features"),
                Attr<kIsNotNone, &LinearParams::bias>("bias"),
            },
        .flops =
            [](const FormulaArgs& a) {
              return LinearFlops(Params<LinearParams>(a), a.inputs);
            },
        .macs =
            [](const FormulaArgs& a) {
              return LinearMacs(Params<LinearParams>(a), a.out);
            },
        .dmas =
            [](const FormulaArgs& a) {
              return LinearDmas(a.module.parameter_count, a.inp, a.out);
            },
        .receptive_field = KeepsPositions,
    },
    {
        .family = ModuleFamily::kReLU,
        .torch_class = "torch.nn.modules.activation.ReLU",
        .read_params = Reads<ActivationParams>,
        .attributes = {Attr<kTruth, &ActivationParams::inplace>("inplace")},
        .activation_operators = {"aten::relu"},
        .flops = ElementwiseModuleFlops<1>,
        .macs = NoCount,
        .dmas = ActivationDmas<0>,
        .receptive_field = KeepsPositions,
    },
    {
        .family = ModuleFamily::kELU,
        .torch_class = "torch.nn.modules.activation.ELU",
        .read_params = Reads<ActivationParams>,
        .attributes = {Attr<kTruth, &ActivationParams::inplace>("inplace")},
        .activation_operators = {"aten::elu"},
        .flops = ElementwiseModuleFlops<6>,
        .macs = NoCount,
        .dmas = ActivationDmas<1>,
        .receptive_field = KeepsPositions,
    },
    {
        .family = ModuleFamily::kLeakyReLU,
        .torch_class = "torch.nn.modules.activation.LeakyReLU",
        .read_params = Reads<ActivationParams>,
        .attributes = {Attr<kTruth, &ActivationParams::inplace>("inplace")},
        .activation_operators = {"aten::leaky_relu"},
        .flops = ElementwiseModuleFlops<4>,
        .macs = NoCount,
        .dmas = ActivationDmas<1>,
        .receptive_field = KeepsPositions,
    },
    {
        .family = ModuleFamily::kReLU6,
        .torch_class = "torch.nn.modules.activation.ReLU6",
        .read_params = Reads<ActivationParams>,
        .attributes = {Attr<kTruth, &ActivationParams::inplace>("inplace")},
        .activation_operators = {"aten::relu6", "aten::hardtanh"},
        .flops = ElementwiseModuleFlops<2>,
        .macs = NoCount,
        .dmas = ActivationDmas<0>,
        .receptive_field = KeepsPositions,
    },
    {
        .family = ModuleFamily::kTanh,
        .torch_class = "torch.nn.modules.activation.Tanh",
        .flops = ElementwiseModuleFlops<6>,
        .macs = NoCount,
        // The input is read for both exponentials.
        .dmas =
            [](const FormulaArgs& a) {
              return ReadWriteDmas(a.inp, a.out, 2, 0, /*inplace=*/false);
            },
        .receptive_field = KeepsPositions,
    },
    {
        .family = ModuleFamily::kSigmoid,
        .torch_class = "torch.nn.modules.activation.Sigmoid",
        .flops = ElementwiseModuleFlops<4>,
        .macs = NoCount,
        .dmas =
            [](const FormulaArgs& a) {
              return ReadWriteDmas(a.inp, a.out, 1, 0, /*inplace=*/false);
            },
        .receptive_field = KeepsPositions,
    },
    {
        .family = ModuleFamily::kConvTranspose,
        .torch_class = "torch.nn.modules.conv._ConvTransposeNd",
        .script_classes = {"torch.nn.modules.conv.ConvTranspose1d",
                           "torch.nn.modules.conv.ConvTranspose2d",
                           "torch.nn.modules.conv.ConvTranspose3d"},
        .read_params = Reads<ConvParams>,
        .attributes = kConvAttributes,
        .flops =
            [](const FormulaArgs& a) {
              return ConvTransposeFlops(Params<ConvParams>(a), a.inputs, a.out);
            },
        .macs =
            [](const FormulaArgs& a) {
              return ConvTransposeMacs(Params<ConvParams>(a), a.inp, a.out);
            },
        .dmas =
            [](const FormulaArgs& a) {
              return ConvTransposeDmas(Params<ConvParams>(a),
                                       a.module.parameter_count, a.out);
            },
        .receptive_field =
            [](const FormulaArgs& a) {
              return ConvTransposeField(Params<ConvParams>(a));
            },
    },
    {
        .family = ModuleFamily::kConv,
        .torch_class = "torch.nn.modules.conv._ConvNd",
        .script_classes = {"torch.nn.modules.conv.Conv1d",
                           "torch.nn.modules.conv.Conv2d",
                           "torch.nn.modules.conv.Conv3d"},
        .read_params = Reads<ConvParams>,
        .attributes = kConvAttributes,
        .flops =
            [](const FormulaArgs& a) {
              return ConvFlops(Params<ConvParams>(a), a.inputs, a.out);
            },
        .macs =
            [](const FormulaArgs& a) {
              return ConvMacs(Params<ConvParams>(a), a.inp, a.out);
            },
        .dmas =
            [](const FormulaArgs& a) {
              return ConvDmas(Params<ConvParams>(a), a.module.parameter_count,
                              a.out);
            },
        .receptive_field = ConvField,
    },
    {
        .family = ModuleFamily::kBatchNorm,
        .torch_class = "torch.nn.modules.batchnorm._BatchNorm",
        .script_classes = {"torch.nn.modules.batchnorm.BatchNorm1d",
                           "torch.nn.modules.batchnorm.BatchNorm2d",
                           "torch.nn.modules.batchnorm.BatchNorm3d",
                           "torch.nn.modules.batchnorm.SyncBatchNorm"},
        .read_params = Reads<BatchNormParams>,
        .attributes =
            {
                Attr<kInt, &BatchNormParams::num_features>("num_features"),
                Attr<kTruth, &BatchNormParams::affine>("affine"),
                Attr<kTruth, &BatchNormParams::track_running_stats>(
                    "track_running_stats"),
                Attr<kTruth, &BatchNormParams::training>("training"),
                Attr<kNumberOrNone, &BatchNormParams::momentum>("momentum"),
                Attr<kNumelOrNone, &BatchNormParams::running_mean_numel>(
                    "running_mean"),
                Attr<kNumelOrNone, &BatchNormParams::running_var_numel>(
                    "running_var"),
                Attr<kNumelOrNone, &BatchNormParams::weight_numel>("weight"),
                Attr<kNumelOrNone, &BatchNormParams::bias_numel>("bias"),
            },
        .flops =
            [](const FormulaArgs& a) {
              return BatchNormFlops(Params<BatchNormParams>(a), a.inputs);
            },
        .macs =
            [](const FormulaArgs& a) {
              return BatchNormMacs(Params<BatchNormParams>(a), a.inp);
            },
        .dmas =
            [](const FormulaArgs& a) {
              return BatchNormDmas(Params<BatchNormParams>(a), a.inp, a.out);
            },
        .receptive_field = KeepsPositions,
    },
    {
        .family = ModuleFamily::kMaxPool,
        .torch_class = "torch.nn.modules.pooling._MaxPoolNd",
        .script_classes = {"torch.nn.modules.pooling.MaxPool1d",
                           "torch.nn.modules.pooling.MaxPool2d",
                           "torch.nn.modules.pooling.MaxPool3d"},
        .read_params = Reads<PoolParams>,
        .attributes =
            {
                Attr<kHyper, &PoolParams::kernel_size>("kernel_size"),
                Attr<kHyper, &PoolParams::stride>("stride"),
                Attr<kHyper, &PoolParams::padding>("padding"),
                Attr<kHyperIfPresent, &PoolParams::dilation>("dilation"),
            },
        .flops =
            [](const FormulaArgs& a) {
              return MaxPoolFlops(Params<PoolParams>(a), a.out);
            },
        .macs =
            [](const FormulaArgs& a) {
              return MaxPoolMacs(Params<PoolParams>(a), a.out);
            },
        .dmas =
            [](const FormulaArgs& a) {
              return PoolDmas(Params<PoolParams>(a), a.inp, a.out);
            },
        .receptive_field = PoolField,
    },
    {
        .family = ModuleFamily::kAvgPool,
        .torch_class = "torch.nn.modules.pooling._AvgPoolNd",
        .script_classes = {"torch.nn.modules.pooling.AvgPool1d",
                           "torch.nn.modules.pooling.AvgPool2d",
                           "torch.nn.modules.pooling.AvgPool3d"},
        .read_params = Reads<PoolParams>,
        .attributes =
            {
                Attr<kHyper, &PoolParams::kernel_size>("kernel_size"),
                Attr<kHyper, &PoolParams::stride>("stride"),
                Attr<kHyper, &PoolParams::padding>("padding"),
                Attr<kHyperIfPresent, &PoolParams::dilation>("dilation"),
            },
        .flops =
            [](const FormulaArgs& a) {
              return AvgPoolFlops(Params<PoolParams>(a), a.inputs, a.out);
            },
        .macs =
            [](const FormulaArgs& a) {
              return AvgPoolMacs(Params<PoolParams>(a), a.inp, a.out);
            },
        .dmas =
            [](const FormulaArgs& a) {
              return PoolDmas(Params<PoolParams>(a), a.inp, a.out);
            },
        .receptive_field = PoolField,
    },
    {
        .family = ModuleFamily::kAdaptiveMaxPool,
        .torch_class = "torch.nn.modules.pooling._AdaptiveMaxPoolNd",
        .script_classes = {"torch.nn.modules.pooling.AdaptiveMaxPool1d",
                           "torch.nn.modules.pooling.AdaptiveMaxPool2d",
                           "torch.nn.modules.pooling.AdaptiveMaxPool3d"},
        .flops =
            [](const FormulaArgs& a) {
              return AdaptivePoolFlops(a.inputs, a.out, /*average=*/false);
            },
        .macs =
            [](const FormulaArgs& a) {
              return AdaptivePoolMacs(a.inp, a.out, /*average=*/false);
            },
        .dmas =
            [](const FormulaArgs& a) { return AdaptivePoolDmas(a.inp, a.out); },
        .receptive_field =
            [](const FormulaArgs& a) {
              return AdaptivePoolField(a.inp, a.out);
            },
    },
    {
        .family = ModuleFamily::kAdaptiveAvgPool,
        .torch_class = "torch.nn.modules.pooling._AdaptiveAvgPoolNd",
        .script_classes = {"torch.nn.modules.pooling.AdaptiveAvgPool1d",
                           "torch.nn.modules.pooling.AdaptiveAvgPool2d",
                           "torch.nn.modules.pooling.AdaptiveAvgPool3d"},
        .flops =
            [](const FormulaArgs& a) {
              return AdaptivePoolFlops(a.inputs, a.out, /*average=*/true);
            },
        .macs =
            [](const FormulaArgs& a) {
              return AdaptivePoolMacs(a.inp, a.out, /*average=*/true);
            },
        .dmas =
            [](const FormulaArgs& a) { return AdaptivePoolDmas(a.inp, a.out); },
        .receptive_field =
            [](const FormulaArgs& a) {
              return AdaptivePoolField(a.inp, a.out);
            },
    },
    {
        .family = ModuleFamily::kDropout,
        .torch_class = "torch.nn.modules.dropout.Dropout",
        .read_params = Reads<DropoutParams>,
        .attributes =
            {
                Attr<kNumber, &DropoutParams::p>("p"),
                Attr<kTruth, &DropoutParams::inplace>("inplace"),
                Attr<kTruth, &DropoutParams::training>("training"),
            },
        .flops =
            [](const FormulaArgs& a) {
              return DropoutFlops(Params<DropoutParams>(a), a.inputs);
            },
        .macs = NoCount,
        // One more access for the probability.
        .dmas =
            [](const FormulaArgs& a) {
              return ReadWriteDmas(a.inp, a.out, 1, 1,
                                   Params<DropoutParams>(a).inplace);
            },
        .receptive_field = KeepsPositions,
    },
    {
        .family = ModuleFamily::kMultiheadAttention,
        .torch_class = "torch.nn.modules.activation.MultiheadAttention",
        .read_params = Reads<MultiheadAttentionParams>,
        .attributes =
            {
                Attr<kInt, &MultiheadAttentionParams::embed_dim>("embed_dim"),
                Attr<kInt, &MultiheadAttentionParams::num_heads>("num_heads"),
                Attr<kInt, &MultiheadAttentionParams::head_dim>("head_dim"),
                Attr<kTruth, &MultiheadAttentionParams::batch_first>(
                    "batch_first"),
                Attr<kIsNotNone, &MultiheadAttentionParams::in_proj_bias>(
                    "in_proj_bias"),
                Attr<kIsNotNone, &MultiheadAttentionParams::bias_k>("bias_k"),
                Attr<kIsNotNone, &MultiheadAttentionParams::bias_v>("bias_v"),
                Attr<kTruth, &MultiheadAttentionParams::add_zero_attn>(
                    "add_zero_attn"),
                Attr<kNumber, &MultiheadAttentionParams::dropout>("dropout"),
                Attr<kTruth, &MultiheadAttentionParams::training>("training"),
                Attr<kLinear, &MultiheadAttentionParams::out_proj>("out_proj"),
            },
        // The only formula that sees the whole output: a returned 3-D
        // attention-weights tensor adds the head averaging.
        .flops =
            [](const FormulaArgs& a) {
              return MultiheadAttentionFlops(
                  Params<MultiheadAttentionParams>(a), a.inputs, &a.output);
            },
    },
    {
        .family = ModuleFamily::kLayerNorm,
        .torch_class = "torch.nn.modules.normalization.LayerNorm",
        .read_params = Reads<LayerNormParams>,
        .attributes =
            {
                Attr<kIntTuple, &LayerNormParams::normalized_shape>(
                    "normalized_shape"),
                Attr<kIsNotNone, &LayerNormParams::weight>("weight"),
                Attr<kSetAndNotNone, &LayerNormParams::bias>("bias"),
            },
        .flops =
            [](const FormulaArgs& a) {
              return LayerNormFlops(Params<LayerNormParams>(a), a.inputs);
            },
    },
    {
        .family = ModuleFamily::kTransformer,
        .torch_class = "torch.nn.modules.transformer.Transformer",
        .read_params = Reads<TransformerParams>,
        .flops =
            [](const FormulaArgs& a) {
              return TransformerFlops(Params<TransformerParams>(a), a.inputs);
            },
    },
};

constexpr bool RowsFollowTheEnum() {
  for (std::size_t i = 0; i < std::size(kRows); ++i) {
    if (kRows[i].family != static_cast<ModuleFamily>(i)) return false;
  }
  return std::size(kRows) ==
         static_cast<std::size_t>(ModuleFamily::kTransformer) + 1;
}
static_assert(RowsFollowTheEnum(),
              "kRows needs one row per ModuleFamily, in the enum's order");

}  // namespace

const ModuleFamilyRow& ModuleFamilyRowFor(ModuleFamily family) {
  const auto index = static_cast<std::size_t>(family);
  return index < std::size(kRows) ? kRows[index] : kRows[0];
}

absl::Span<const ModuleFamilyRow> ModuleFamilyRows() { return kRows; }

}  // namespace torchscan::formulas
