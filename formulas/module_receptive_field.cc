// Module receptive field, effective stride and effective padding
// (torchscan/modules/receptive.py of torchscan 0.2.0). Per module, never
// accumulated along the network; Python's number kinds are kept.

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "formulas/module_formula_support.h"
#include "formulas/module_formulas.h"
#include "pycompat/python_semantics.h"

namespace torchscan::formulas {
namespace {

using module_internal::ParamsOf;
using pycompat::Py;
using report::MetricValue;

ReceptiveField IdentityField() { return {1.0, 1.0, 0.0}; }

// An int or string hyper-parameter as a metric value (First() unwrapped any
// tuple already).
MetricValue AsMetricValue(const HyperParameter& value) {
  if (value.kind == HyperParameter::Kind::kString) return value.text;
  return Count(value.ints.front());
}

// (-kernel, 1.0 / stride, 0.0): a negative kernel and a fractional stride.
Py<ReceptiveField> ConvTransposeField(const ConvParams& conv) {
  Py<HyperParameter> kernel = pycompat::First(conv.kernel_size);
  if (!kernel.ok()) return kernel.error();
  Py<HyperParameter> stride = pycompat::First(conv.stride);
  if (!stride.ok()) return stride.error();
  const std::int64_t s = stride->ints.front();
  if (s == 0)
    return pycompat::Raise("ZeroDivisionError", pycompat::kFloatDivisionByZero);
  return ReceptiveField{-Count(kernel->ints.front()),
                        1.0 / static_cast<double>(s), 0.0};
}

// Conv and pools: the dilated first kernel size when the module has a
// dilation attribute (Conv, MaxPool; AvgPool has none), the first stride and
// the first padding, as stored (a Conv's "same" stays a string).
Py<ReceptiveField> KernelField(const HyperParameter& kernel_size,
                               const HyperParameter* dilation,
                               const HyperParameter& stride,
                               const HyperParameter& padding) {
  Py<HyperParameter> kernel = pycompat::First(kernel_size);
  if (!kernel.ok()) return kernel.error();
  Count field = kernel->ints.front();
  if (dilation != nullptr) {
    Py<HyperParameter> d = pycompat::First(*dilation);
    if (!d.ok()) return d.error();
    field = Count(d->ints.front()) * (field - 1) + 1;
  }
  Py<HyperParameter> s = pycompat::First(stride);
  if (!s.ok()) return s.error();
  Py<HyperParameter> p = pycompat::First(padding);
  if (!p.ok()) return p.error();
  return ReceptiveField{field, AsMetricValue(*s), AsMetricValue(*p)};
}

// stride = kernel = ceil(in / out) over the last dimension; padding
// (in - kernel * stride) / 2, a float that may be negative.
Py<ReceptiveField> AdaptivePoolField(const CallValue& inp,
                                     const CallValue& out) {
  Py<const Dims*> in_shape = pycompat::ShapeOf(inp);
  if (!in_shape.ok()) return in_shape.error();
  Py<std::int64_t> in_size = pycompat::DimAt(**in_shape, -1);
  if (!in_size.ok()) return in_size.error();
  Py<const Dims*> out_shape = pycompat::ShapeOf(out);
  if (!out_shape.ok()) return out_shape.error();
  Py<std::int64_t> out_size = pycompat::DimAt(**out_shape, -1);
  if (!out_size.ok()) return out_size.error();
  if (*out_size == 0)
    return pycompat::Raise("ZeroDivisionError", pycompat::kDivisionByZero);
  // Python's true division then math.ceil; exact for sizes below 2^53.
  const double ratio =
      static_cast<double>(*in_size) / static_cast<double>(*out_size);
  const auto stride = static_cast<std::int64_t>(std::ceil(ratio));
  const Count padding_twice = Count(*in_size) - Count(stride) * stride;
  return ReceptiveField{Count(stride), Count(stride),
                        static_cast<double>(padding_twice) / 2.0};
}

}  // namespace

absl::StatusOr<FormulaOutcome<ReceptiveField>> ModuleReceptiveField(
    const ModuleDescription& module, const ModuleCall& call) {
  TS_RETURN_IF_ERROR(ValidateModuleDescription(module));
  using Outcome = FormulaOutcome<ReceptiveField>;
  const CallValue& inp = pycompat::OrNone(FirstTensor(call.inputs));
  const CallValue& out = pycompat::OrNone(FirstTensor(call.output));
  Py<ReceptiveField> field = IdentityField();
  switch (module.family) {
    case ModuleFamily::kIdentity:
    case ModuleFamily::kFlatten:
    case ModuleFamily::kReLU:
    case ModuleFamily::kELU:
    case ModuleFamily::kLeakyReLU:
    case ModuleFamily::kReLU6:
    case ModuleFamily::kTanh:
    case ModuleFamily::kSigmoid:
    case ModuleFamily::kBatchNorm:
    case ModuleFamily::kDropout:
    case ModuleFamily::kLinear:
      break;
    case ModuleFamily::kConvTranspose:
      field = ConvTransposeField(ParamsOf<ConvParams>(module));
      break;
    case ModuleFamily::kConv: {
      const ConvParams& conv = ParamsOf<ConvParams>(module);
      field = KernelField(conv.kernel_size, &conv.dilation, conv.stride,
                          conv.padding);
      break;
    }
    case ModuleFamily::kMaxPool:
    case ModuleFamily::kAvgPool: {
      const PoolParams& pool = ParamsOf<PoolParams>(module);
      field = KernelField(pool.kernel_size,
                          pool.dilation ? &*pool.dilation : nullptr,
                          pool.stride, pool.padding);
      break;
    }
    case ModuleFamily::kAdaptiveMaxPool:
    case ModuleFamily::kAdaptiveAvgPool:
      field = AdaptivePoolField(inp, out);
      break;
    case ModuleFamily::kMultiheadAttention:
    case ModuleFamily::kLayerNorm:
    case ModuleFamily::kTransformer:
    case ModuleFamily::kUnsupported:
      return Outcome::Value(IdentityField(),
                            {UnsupportedModuleWarning(module.type)});
  }
  if (!field.ok()) return Outcome::Error(field.error());
  return Outcome::Value(*field);
}

}  // namespace torchscan::formulas
