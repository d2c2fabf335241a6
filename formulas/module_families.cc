#include "formulas/module_families.h"

#include <cstddef>
#include <iterator>
#include <utility>

#include "base/status_macros.h"
#include "formulas/attention_module_flops.h"
#include "formulas/module_family_formulas.h"
#include "formulas/module_formula_support.h"
#include "formulas/module_params_json.h"

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
using pycompat::Py;

// A typed hyper-parameter reader as a ParamsReader.
template <auto kRead>
absl::StatusOr<ModuleParams> Reads(const report::JsonObject& object) {
  TS_ASSIGN_OR_RETURN(auto params, kRead(object));
  return ModuleParams(std::move(params));
}

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

// NOTE: one row per family, in ModuleFamily's order (checked below). The
// families are disjoint for torch's classes, so upstream's per-metric
// isinstance order does not matter once a front end has picked the family.
constexpr ModuleFamilyRow kRows[] = {
    {.family = ModuleFamily::kUnsupported},
    {
        .family = ModuleFamily::kIdentity,
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
        .read_params = Reads<params_json::ReadLinear>,
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
        .read_params = Reads<params_json::ReadActivation>,
        .flops = ElementwiseModuleFlops<1>,
        .macs = NoCount,
        .dmas = ActivationDmas<0>,
        .receptive_field = KeepsPositions,
    },
    {
        .family = ModuleFamily::kELU,
        .read_params = Reads<params_json::ReadActivation>,
        .flops = ElementwiseModuleFlops<6>,
        .macs = NoCount,
        .dmas = ActivationDmas<1>,
        .receptive_field = KeepsPositions,
    },
    {
        .family = ModuleFamily::kLeakyReLU,
        .read_params = Reads<params_json::ReadActivation>,
        .flops = ElementwiseModuleFlops<4>,
        .macs = NoCount,
        .dmas = ActivationDmas<1>,
        .receptive_field = KeepsPositions,
    },
    {
        .family = ModuleFamily::kReLU6,
        .read_params = Reads<params_json::ReadActivation>,
        .flops = ElementwiseModuleFlops<2>,
        .macs = NoCount,
        .dmas = ActivationDmas<0>,
        .receptive_field = KeepsPositions,
    },
    {
        .family = ModuleFamily::kTanh,
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
        .read_params = Reads<params_json::ReadConv>,
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
        .read_params = Reads<params_json::ReadConv>,
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
        .read_params = Reads<params_json::ReadBatchNorm>,
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
        .read_params = Reads<params_json::ReadPool>,
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
        .read_params = Reads<params_json::ReadPool>,
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
        .read_params = Reads<params_json::ReadDropout>,
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
        .read_params = Reads<params_json::ReadMultiheadAttention>,
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
        .read_params = Reads<params_json::ReadLayerNorm>,
        .flops =
            [](const FormulaArgs& a) {
              return LayerNormFlops(Params<LayerNormParams>(a), a.inputs);
            },
    },
    {
        .family = ModuleFamily::kTransformer,
        .read_params = Reads<params_json::ReadTransformer>,
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

}  // namespace torchscan::formulas
