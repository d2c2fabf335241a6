// Module FLOPs (torchscan/modules/flops.py of torchscan 0.2.0), except
// MultiheadAttention and Transformer, which live in attention_module_flops.cc.
//
// Each formula evaluates in the order the Python one does, so that a call
// upstream fails on fails here with the same exception.

#include <vector>

#include "absl/status/status.h"
#include "base/status_macros.h"
#include "formulas/attention_module_flops.h"
#include "formulas/module_family_formulas.h"
#include "formulas/module_formula_support.h"
#include "formulas/module_formulas.h"
#include "formulas/python_semantics.h"

namespace torchscan::formulas::module_internal {

using python::Py;
using python::PyTuple;

// inputs[0].numel() * factor: ReLU (1), ReLU6 (2), Sigmoid and LeakyReLU (4),
// ELU and Tanh (6).
Py<ExactCount> ElementwiseFlops(const PyTuple& inputs, int factor) {
  TS_PY_ASSIGN_OR_RAISE(const CallValue* x, python::ItemAt(inputs, 0));
  TS_PY_ASSIGN_OR_RAISE(ExactCount numel, python::NumelOf(*x));
  return numel * factor;
}

// Kernel volume times grouped input channels, two operations per term minus
// one, plus one for the bias, per output element.
Py<ExactCount> ConvFlops(const ConvParams& conv, const PyTuple& inputs,
                         const CallValue& out) {
  const ExactCount kernel = python::ProductOf(conv.kernel_size);
  TS_PY_ASSIGN_OR_RAISE(const CallValue* x, python::ItemAt(inputs, 0));
  TS_PY_ASSIGN_OR_RAISE(const Dims* shape, python::ShapeOf(*x));
  TS_PY_ASSIGN_OR_RAISE(std::int64_t channels, python::DimAt(*shape, 1));
  TS_PY_ASSIGN_OR_RAISE(ExactCount grouped,
                        python::FloorDivide(channels, conv.groups));
  const ExactCount terms = kernel * grouped;
  TS_PY_ASSIGN_OR_RAISE(ExactCount out_numel, python::NumelOf(out));
  return out_numel * (ExactCount(2) * terms - 1 + (conv.bias ? 1 : 0));
}

Py<ExactCount> ConvTransposeFlops(const ConvParams& conv, const PyTuple& inputs,
                                  const CallValue& out) {
  // Upstream adds eight operations per spatial dimension for the output
  // padding computation.
  TS_PY_ASSIGN_OR_RAISE(ExactCount conv_flops, ConvFlops(conv, inputs, out));
  return ExactCount(8) * python::LengthOf(conv.kernel_size) + conv_flops;
}

Py<ExactCount> BatchNormFlops(const BatchNormParams& bn,
                              const PyTuple& inputs) {
  TS_PY_ASSIGN_OR_RAISE(const CallValue* x, python::ItemAt(inputs, 0));
  TS_PY_ASSIGN_OR_RAISE(ExactCount numel, python::NumelOf(*x));
  ExactCount flops = ExactCount(bn.num_features) * 2 + numel * 2;
  if (bn.affine) flops += numel * 2;
  if (bn.track_running_stats && bn.training) {
    if (!bn.momentum.has_value()) flops += 1;
    flops +=
        numel + ExactCount(3) * numel + ExactCount(2) * bn.num_features * 3;
  }
  return flops;
}

Py<ExactCount> MaxPoolFlops(const PoolParams& pool, const CallValue& out) {
  const ExactCount kernel = PoolKernelVolume(pool.kernel_size);
  TS_PY_ASSIGN_OR_RAISE(ExactCount out_numel, python::NumelOf(out));
  return out_numel * (kernel - 1);
}

Py<ExactCount> AvgPoolFlops(const PoolParams& pool, const PyTuple& inputs,
                            const CallValue& out) {
  const ExactCount kernel = PoolKernelVolume(pool.kernel_size);
  TS_PY_ASSIGN_OR_RAISE(ExactCount out_numel, python::NumelOf(out));
  TS_PY_ASSIGN_OR_RAISE(const CallValue* x, python::ItemAt(inputs, 0));
  TS_PY_ASSIGN_OR_RAISE(std::int64_t ndim, python::NdimOf(*x));
  return out_numel * (kernel - 1 + ndim - 2);
}

// Adaptive pools: `extra` adds one division per spatial dimension (average).
Py<ExactCount> AdaptivePoolFlops(const PyTuple& inputs, const CallValue& out,
                                 bool average) {
  TS_PY_ASSIGN_OR_RAISE(const CallValue* x, python::ItemAt(inputs, 0));
  TS_PY_ASSIGN_OR_RAISE(std::vector<ExactCount> kernel,
                        AdaptiveKernelSize(*x, out));
  TS_PY_ASSIGN_OR_RAISE(ExactCount out_numel, python::NumelOf(out));
  ExactCount volume = 1;
  for (const ExactCount& size : kernel) volume = volume * size;
  ExactCount per_output = volume - 1;
  if (average) per_output += static_cast<std::int64_t>(kernel.size());
  return out_numel * per_output;
}

// Counted whenever p > 0, training or not (quirk 9).
Py<ExactCount> DropoutFlops(const DropoutParams& dropout,
                            const PyTuple& inputs) {
  if (!(dropout.p > 0)) return ExactCount(0);
  return ElementwiseFlops(inputs, 1);
}

Py<ExactCount> LinearFlops(const LinearParams& linear, const PyTuple& inputs) {
  TS_PY_ASSIGN_OR_RAISE(const CallValue* x, python::ItemAt(inputs, 0));
  TS_PY_ASSIGN_OR_RAISE(const Dims* shape, python::ShapeOf(*x));
  const ExactCount outputs = ExactCount(linear.out_features) *
                             ExactProduct(python::AllButLast(*shape));
  const ExactCount products =
      outputs * (ExactCount(2) * linear.in_features - 1);
  return products + (linear.bias ? outputs : ExactCount(0));
}

Py<ExactCount> LayerNormFlops(const LayerNormParams& norm,
                              const PyTuple& inputs) {
  TS_PY_ASSIGN_OR_RAISE(const CallValue* x, python::ItemAt(inputs, 0));
  TS_PY_ASSIGN_OR_RAISE(ExactCount numel, python::NumelOf(*x));
  TS_PY_ASSIGN_OR_RAISE(
      ExactCount rows,
      python::FloorDivide(numel, ExactProduct(norm.normalized_shape)));
  return ExactCount(6) * numel + ExactCount(2) * rows +
         (norm.weight ? numel : ExactCount(0)) +
         (norm.bias ? numel : ExactCount(0));
}

}  // namespace torchscan::formulas::module_internal
