// Module MACs (torchscan/modules/macs.py of torchscan 0.2.0): formulas read
// the first input tensor and the first output tensor of the call.

#include <vector>

#include "absl/status/status.h"
#include "base/status_macros.h"
#include "formulas/module_family_formulas.h"
#include "formulas/module_formula_support.h"
#include "formulas/module_formulas.h"
#include "pycompat/python_semantics.h"

namespace torchscan::formulas::module_internal {

using pycompat::Py;

// One multiply-accumulate per input feature and output element; the bias
// rides along with the accumulation.
Py<ExactCount> LinearMacs(const LinearParams& linear, const CallValue& out) {
  Py<const Dims*> shape = pycompat::ShapeOf(out);
  if (!shape.ok()) return shape.error();
  return ExactCount(linear.in_features) * ExactProduct(**shape);
}

Py<ExactCount> ConvMacs(const ConvParams& conv, const CallValue& inp,
                        const CallValue& out) {
  Py<ExactCount> out_numel = pycompat::NumelOf(out);
  if (!out_numel.ok()) return out_numel.error();
  Py<const Dims*> shape = pycompat::ShapeOf(inp);
  if (!shape.ok()) return shape.error();
  Py<std::int64_t> channels = pycompat::DimAt(**shape, 1);
  if (!channels.ok()) return channels.error();
  Py<ExactCount> grouped = pycompat::FloorDivide(*channels, conv.groups);
  if (!grouped.ok()) return grouped.error();
  return *out_numel * *grouped * pycompat::ProductOf(conv.kernel_size);
}

// Four more per spatial dimension for the output padding computation.
Py<ExactCount> ConvTransposeMacs(const ConvParams& conv, const CallValue& inp,
                                 const CallValue& out) {
  Py<ExactCount> conv_macs = ConvMacs(conv, inp, out);
  if (!conv_macs.ok()) return conv_macs.error();
  return ExactCount(4) * pycompat::LengthOf(conv.kernel_size) + *conv_macs;
}

Py<ExactCount> BatchNormMacs(const BatchNormParams& bn, const CallValue& inp) {
  Py<ExactCount> numel = pycompat::NumelOf(inp);
  if (!numel.ok()) return numel.error();
  ExactCount macs = *numel * (bn.affine ? 2 : 1);
  // Read unconditionally upstream, so a 0-d input fails even in eval mode.
  Py<const Dims*> shape = pycompat::ShapeOf(inp);
  if (!shape.ok()) return shape.error();
  Py<std::int64_t> batch = pycompat::DimAt(**shape, 0);
  if (!batch.ok()) return batch.error();
  const ExactCount spatial = ExactProduct(pycompat::DimsFrom(**shape, 2));
  if (bn.track_running_stats && bn.training) {
    const ExactCount active = ExactCount(*batch) * spatial;
    macs += ExactCount(bn.num_features) * (active - 1);
    macs += ExactCount(bn.num_features) * (ExactCount(2) * active - 1);
    macs += ExactCount(2) * bn.num_features * 2;
  }
  return macs;
}

Py<ExactCount> MaxPoolMacs(const PoolParams& pool, const CallValue& out) {
  const ExactCount kernel = PoolKernelVolume(pool.kernel_size);
  Py<ExactCount> out_numel = pycompat::NumelOf(out);
  if (!out_numel.ok()) return out_numel.error();
  return *out_numel * (kernel - 1);
}

Py<ExactCount> AvgPoolMacs(const PoolParams& pool, const CallValue& inp,
                           const CallValue& out) {
  const ExactCount kernel = PoolKernelVolume(pool.kernel_size);
  Py<ExactCount> out_numel = pycompat::NumelOf(out);
  if (!out_numel.ok()) return out_numel.error();
  Py<std::int64_t> ndim = pycompat::NdimOf(inp);
  if (!ndim.ok()) return ndim.error();
  return *out_numel * (kernel - 1 + *ndim - 2);
}

Py<ExactCount> AdaptivePoolMacs(const CallValue& inp, const CallValue& out,
                                bool average) {
  Py<std::vector<ExactCount>> kernel = AdaptiveKernelSize(inp, out);
  if (!kernel.ok()) return kernel.error();
  Py<ExactCount> out_numel = pycompat::NumelOf(out);
  if (!out_numel.ok()) return out_numel.error();
  ExactCount volume = 1;
  for (const ExactCount& size : *kernel) volume = volume * size;
  ExactCount per_output = volume - 1;
  if (average) per_output += static_cast<std::int64_t>(kernel->size());
  return *out_numel * per_output;
}

}  // namespace torchscan::formulas::module_internal
