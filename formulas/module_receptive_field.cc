// Module receptive field, effective stride and effective padding
// (torchscan/modules/receptive.py of torchscan 0.2.0). Per module, never
// accumulated along the network; Python's number kinds are kept.

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "formulas/module_family_formulas.h"
#include "formulas/module_formula_support.h"
#include "formulas/module_formulas.h"
#include "formulas/python_semantics.h"

namespace torchscan::formulas::module_internal {

using python::Py;
using report::MetricValue;

ReceptiveField IdentityField() { return {1.0, 1.0, 0.0}; }

namespace {

// An int or string hyper-parameter as a metric value (First() unwrapped any
// tuple already).
MetricValue AsMetricValue(const HyperParameter& value) {
  if (value.kind == HyperParameter::Kind::kString) return value.text;
  return Count(value.ints.front());
}

}  // namespace

// (-kernel, 1.0 / stride, 0.0): a negative kernel and a fractional stride.
Py<ReceptiveField> ConvTransposeField(const ConvParams& conv) {
  TS_PY_ASSIGN_OR_RAISE(HyperParameter kernel, python::First(conv.kernel_size));
  TS_PY_ASSIGN_OR_RAISE(HyperParameter stride, python::First(conv.stride));
  const std::int64_t s = stride.ints.front();
  if (s == 0)
    return python::Raise("ZeroDivisionError", python::kFloatDivisionByZero);
  return ReceptiveField{-Count(kernel.ints.front()),
                        1.0 / static_cast<double>(s), 0.0};
}

// Conv and pools: the dilated first kernel size when the module has a
// dilation attribute (Conv, MaxPool; AvgPool has none), the first stride and
// the first padding, as stored (a Conv's "same" stays a string).
Py<ReceptiveField> KernelField(const HyperParameter& kernel_size,
                               const HyperParameter* dilation,
                               const HyperParameter& stride,
                               const HyperParameter& padding) {
  TS_PY_ASSIGN_OR_RAISE(HyperParameter kernel, python::First(kernel_size));
  Count field = kernel.ints.front();
  if (dilation != nullptr) {
    TS_PY_ASSIGN_OR_RAISE(HyperParameter d, python::First(*dilation));
    field = Count(d.ints.front()) * (field - 1) + 1;
  }
  TS_PY_ASSIGN_OR_RAISE(HyperParameter s, python::First(stride));
  TS_PY_ASSIGN_OR_RAISE(HyperParameter p, python::First(padding));
  return ReceptiveField{field, AsMetricValue(s), AsMetricValue(p)};
}

// stride = kernel = ceil(in / out) over the last dimension; padding
// (in - kernel * stride) / 2, a float that may be negative.
Py<ReceptiveField> AdaptivePoolField(const CallValue& inp,
                                     const CallValue& out) {
  TS_PY_ASSIGN_OR_RAISE(const Dims* in_shape, python::ShapeOf(inp));
  TS_PY_ASSIGN_OR_RAISE(std::int64_t in_size, python::DimAt(*in_shape, -1));
  TS_PY_ASSIGN_OR_RAISE(const Dims* out_shape, python::ShapeOf(out));
  TS_PY_ASSIGN_OR_RAISE(std::int64_t out_size, python::DimAt(*out_shape, -1));
  if (out_size == 0)
    return python::Raise("ZeroDivisionError", python::kDivisionByZero);
  // Python's true division then math.ceil; exact for sizes below 2^53.
  const double ratio =
      static_cast<double>(in_size) / static_cast<double>(out_size);
  const auto stride = static_cast<std::int64_t>(std::ceil(ratio));
  const Count padding_twice = Count(in_size) - Count(stride) * stride;
  return ReceptiveField{Count(stride), Count(stride),
                        static_cast<double>(padding_twice) / 2.0};
}

}  // namespace torchscan::formulas::module_internal
