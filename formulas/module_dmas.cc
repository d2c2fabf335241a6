// Module DMAs, direct memory accesses (torchscan/modules/memory.py of
// torchscan 0.2.0): formulas read the first input tensor, the first output
// tensor and the module's recursive parameter count.

#include <vector>

#include "absl/status/status.h"
#include "base/status_macros.h"
#include "formulas/module_family_formulas.h"
#include "formulas/module_formula_support.h"
#include "formulas/module_formulas.h"
#include "formulas/python_semantics.h"

namespace torchscan::formulas::module_internal {

using python::Py;

// inp.numel() * input_reads + extra + (0 if inplace else out.numel()).
Py<ExactCount> ReadWriteDmas(const CallValue& inp, const CallValue& out,
                             int input_reads, int extra, bool inplace) {
  TS_PY_ASSIGN_OR_RAISE(ExactCount in_numel, python::NumelOf(inp));
  ExactCount dmas = in_numel * input_reads + extra;
  if (inplace) return dmas;
  TS_PY_ASSIGN_OR_RAISE(ExactCount out_numel, python::NumelOf(out));
  return dmas + out_numel;
}

// Reads the input, the weight and the bias; writes the output.
Py<ExactCount> LinearDmas(Count parameters, const CallValue& inp,
                          const CallValue& out) {
  TS_PY_ASSIGN_OR_RAISE(ExactCount in_numel, python::NumelOf(inp));
  TS_PY_ASSIGN_OR_RAISE(ExactCount out_numel, python::NumelOf(out));
  return in_numel + parameters + out_numel;
}

// Every output element reads its kernel window in each grouped input
// channel (the module's in_channels, not the input's), plus the parameters.
Py<ExactCount> ConvDmas(const ConvParams& conv, Count parameters,
                        const CallValue& out) {
  TS_PY_ASSIGN_OR_RAISE(ExactCount out_numel, python::NumelOf(out));
  TS_PY_ASSIGN_OR_RAISE(
      ExactCount input_dmas,
      python::FloorDivide(ExactCount(conv.in_channels) *
                              python::ProductOf(conv.kernel_size) * out_numel,
                          conv.groups));
  return input_dmas + parameters + out_numel;
}

// Stride, padding and kernel size are read per spatial dimension.
Py<ExactCount> ConvTransposeDmas(const ConvParams& conv, Count parameters,
                                 const CallValue& out) {
  TS_PY_ASSIGN_OR_RAISE(ExactCount conv_dmas, ConvDmas(conv, parameters, out));
  return ExactCount(5) * python::LengthOf(conv.kernel_size) + conv_dmas;
}

Py<ExactCount> BatchNormDmas(const BatchNormParams& bn, const CallValue& inp,
                             const CallValue& out) {
  TS_PY_ASSIGN_OR_RAISE(ExactCount in_numel, python::NumelOf(inp));
  const bool has_running_stats =
      bn.running_mean_numel.has_value() && bn.running_var_numel.has_value();
  ExactCount ops = 1;  // eps
  if (has_running_stats) {
    ops += ExactCount(*bn.running_mean_numel) + *bn.running_var_numel;
  }
  if (bn.affine && bn.weight_numel.has_value() && bn.bias_numel.has_value()) {
    ops += ExactCount(*bn.weight_numel) + *bn.bias_numel;
  }
  if (bn.momentum.has_value()) ops += 1;  // the exponential average factor
  if (bn.training && bn.track_running_stats && has_running_stats) {
    // num_batches_tracked and both running statistics are updated.
    ops += ExactCount(1) + *bn.running_mean_numel + *bn.running_var_numel;
  }
  TS_PY_ASSIGN_OR_RAISE(ExactCount out_numel, python::NumelOf(out));
  return in_numel + ops + out_numel;
}

// An int kernel is expanded to (k,) * (inp.ndim - 2) here, unlike in the
// pool FLOPs and MACs (quirk 10).
Py<ExactCount> PoolDmas(const PoolParams& pool, const CallValue& inp,
                        const CallValue& out) {
  ExactCount volume = python::ProductOf(pool.kernel_size);
  if (pool.kernel_size.kind != HyperParameter::Kind::kTuple) {
    TS_PY_ASSIGN_OR_RAISE(std::int64_t ndim, python::NdimOf(inp));
    volume = 1;
    for (std::int64_t i = 0; i < ndim - 2; ++i) {
      volume = volume * pool.kernel_size.ints.front();
    }
  }
  TS_PY_ASSIGN_OR_RAISE(ExactCount out_numel, python::NumelOf(out));
  return volume * out_numel + out_numel;
}

Py<ExactCount> AdaptivePoolDmas(const CallValue& inp, const CallValue& out) {
  TS_PY_ASSIGN_OR_RAISE(std::vector<ExactCount> kernel,
                        AdaptiveKernelSize(inp, out));
  ExactCount volume = 1;
  for (const ExactCount& size : kernel) volume = volume * size;
  TS_PY_ASSIGN_OR_RAISE(ExactCount out_numel, python::NumelOf(out));
  return volume * out_numel + out_numel;
}

}  // namespace torchscan::formulas::module_internal
