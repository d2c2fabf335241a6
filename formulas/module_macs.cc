// Module MACs (torchscan/modules/macs.py of torchscan 0.2.0): formulas read
// the first input tensor and the first output tensor of the call.

#include <vector>

#include "absl/status/status.h"
#include "base/status_macros.h"
#include "formulas/module_family_formulas.h"
#include "formulas/module_formula_support.h"
#include "formulas/module_formulas.h"
#include "formulas/python_semantics.h"

namespace torchscan::formulas::module_internal {

using python::Py;

// One multiply-accumulate per input feature and output element; the bias
// rides along with the accumulation.
Py<ExactCount> LinearMacs(const LinearParams& linear, const CallValue& out) {
  TS_PY_ASSIGN_OR_RAISE(const Dims* shape, python::ShapeOf(out));
  return ExactCount(linear.in_features) * ExactProduct(*shape);
}

Py<ExactCount> ConvMacs(const ConvParams& conv, const CallValue& inp,
                        const CallValue& out) {
  TS_PY_ASSIGN_OR_RAISE(ExactCount out_numel, python::NumelOf(out));
  TS_PY_ASSIGN_OR_RAISE(const Dims* shape, python::ShapeOf(inp));
  TS_PY_ASSIGN_OR_RAISE(std::int64_t channels, python::DimAt(*shape, 1));
  TS_PY_ASSIGN_OR_RAISE(ExactCount grouped,
                        python::FloorDivide(channels, conv.groups));
  return out_numel * grouped * python::ProductOf(conv.kernel_size);
}

// Four more per spatial dimension for the output padding computation.
Py<ExactCount> ConvTransposeMacs(const ConvParams& conv, const CallValue& inp,
                                 const CallValue& out) {
  TS_PY_ASSIGN_OR_RAISE(ExactCount conv_macs, ConvMacs(conv, inp, out));
  return ExactCount(4) * python::LengthOf(conv.kernel_size) + conv_macs;
}

Py<ExactCount> BatchNormMacs(const BatchNormParams& bn, const CallValue& inp) {
  TS_PY_ASSIGN_OR_RAISE(ExactCount numel, python::NumelOf(inp));
  ExactCount macs = numel * (bn.affine ? 2 : 1);
  // Read unconditionally upstream, so a 0-d input fails even in eval mode.
  TS_PY_ASSIGN_OR_RAISE(const Dims* shape, python::ShapeOf(inp));
  TS_PY_ASSIGN_OR_RAISE(std::int64_t batch, python::DimAt(*shape, 0));
  const ExactCount spatial = ExactProduct(python::DimsFrom(*shape, 2));
  if (bn.track_running_stats && bn.training) {
    const ExactCount active = ExactCount(batch) * spatial;
    macs += ExactCount(bn.num_features) * (active - 1);
    macs += ExactCount(bn.num_features) * (ExactCount(2) * active - 1);
    macs += ExactCount(2) * bn.num_features * 2;
  }
  return macs;
}

Py<ExactCount> MaxPoolMacs(const PoolParams& pool, const CallValue& out) {
  const ExactCount kernel = PoolKernelVolume(pool.kernel_size);
  TS_PY_ASSIGN_OR_RAISE(ExactCount out_numel, python::NumelOf(out));
  return out_numel * (kernel - 1);
}

Py<ExactCount> AvgPoolMacs(const PoolParams& pool, const CallValue& inp,
                           const CallValue& out) {
  const ExactCount kernel = PoolKernelVolume(pool.kernel_size);
  TS_PY_ASSIGN_OR_RAISE(ExactCount out_numel, python::NumelOf(out));
  TS_PY_ASSIGN_OR_RAISE(std::int64_t ndim, python::NdimOf(inp));
  return out_numel * (kernel - 1 + ndim - 2);
}

Py<ExactCount> AdaptivePoolMacs(const CallValue& inp, const CallValue& out,
                                bool average) {
  TS_PY_ASSIGN_OR_RAISE(std::vector<ExactCount> kernel,
                        AdaptiveKernelSize(inp, out));
  TS_PY_ASSIGN_OR_RAISE(ExactCount out_numel, python::NumelOf(out));
  ExactCount volume = 1;
  for (const ExactCount& size : kernel) volume = volume * size;
  ExactCount per_output = volume - 1;
  if (average) per_output += static_cast<std::int64_t>(kernel.size());
  return out_numel * per_output;
}

}  // namespace torchscan::formulas::module_internal
