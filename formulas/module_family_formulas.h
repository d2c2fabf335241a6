// Internal to formulas/: the small per-family formulas that the module
// family table (module_families.cc) names, one metric per source file:
// module_flops.cc, attention_module_flops.cc, module_macs.cc, module_dmas.cc
// and module_receptive_field.cc. Each evaluates in the order the Python one
// does, so that a call upstream fails on fails here with the same exception.
//
// The parameters are the family's hyper-parameters and the values of the
// call the formula reads: `inputs` is the ordered-inputs tuple, `inp` the
// first input tensor, `out` the first output tensor (None when missing).

#ifndef TORCHSCAN_FORMULAS_MODULE_FAMILY_FORMULAS_H_
#define TORCHSCAN_FORMULAS_MODULE_FAMILY_FORMULAS_H_

#include "formulas/exact_count.h"
#include "formulas/module_call.h"
#include "formulas/module_description.h"
#include "formulas/module_formulas.h"
#include "formulas/python_semantics.h"
#include "report/count.h"

namespace torchscan::formulas::module_internal {

// FLOPs (torchscan/modules/flops.py).

// inputs[0].numel() * factor: ReLU (1), ReLU6 (2), Sigmoid and LeakyReLU (4),
// ELU and Tanh (6).
python::Py<ExactCount> ElementwiseFlops(const python::PyTuple& inputs,
                                        int factor);
python::Py<ExactCount> LinearFlops(const LinearParams& linear,
                                   const python::PyTuple& inputs);
python::Py<ExactCount> ConvFlops(const ConvParams& conv,
                                 const python::PyTuple& inputs,
                                 const CallValue& out);
python::Py<ExactCount> ConvTransposeFlops(const ConvParams& conv,
                                          const python::PyTuple& inputs,
                                          const CallValue& out);
python::Py<ExactCount> BatchNormFlops(const BatchNormParams& bn,
                                      const python::PyTuple& inputs);
python::Py<ExactCount> MaxPoolFlops(const PoolParams& pool,
                                    const CallValue& out);
python::Py<ExactCount> AvgPoolFlops(const PoolParams& pool,
                                    const python::PyTuple& inputs,
                                    const CallValue& out);
// `average` adds one division per spatial dimension.
python::Py<ExactCount> AdaptivePoolFlops(const python::PyTuple& inputs,
                                         const CallValue& out, bool average);
python::Py<ExactCount> DropoutFlops(const DropoutParams& dropout,
                                    const python::PyTuple& inputs);
python::Py<ExactCount> LayerNormFlops(const LayerNormParams& norm,
                                      const python::PyTuple& inputs);

// MACs (torchscan/modules/macs.py).

python::Py<ExactCount> LinearMacs(const LinearParams& linear,
                                  const CallValue& out);
python::Py<ExactCount> ConvMacs(const ConvParams& conv, const CallValue& inp,
                                const CallValue& out);
python::Py<ExactCount> ConvTransposeMacs(const ConvParams& conv,
                                         const CallValue& inp,
                                         const CallValue& out);
python::Py<ExactCount> BatchNormMacs(const BatchNormParams& bn,
                                     const CallValue& inp);
python::Py<ExactCount> MaxPoolMacs(const PoolParams& pool,
                                   const CallValue& out);
python::Py<ExactCount> AvgPoolMacs(const PoolParams& pool, const CallValue& inp,
                                   const CallValue& out);
python::Py<ExactCount> AdaptivePoolMacs(const CallValue& inp,
                                        const CallValue& out, bool average);

// DMAs (torchscan/modules/memory.py).

// inp.numel() * input_reads + extra + (0 if inplace else out.numel()).
python::Py<ExactCount> ReadWriteDmas(const CallValue& inp, const CallValue& out,
                                     int input_reads, int extra, bool inplace);
python::Py<ExactCount> LinearDmas(report::Count parameters,
                                  const CallValue& inp, const CallValue& out);
python::Py<ExactCount> ConvDmas(const ConvParams& conv,
                                report::Count parameters, const CallValue& out);
python::Py<ExactCount> ConvTransposeDmas(const ConvParams& conv,
                                         report::Count parameters,
                                         const CallValue& out);
python::Py<ExactCount> BatchNormDmas(const BatchNormParams& bn,
                                     const CallValue& inp,
                                     const CallValue& out);
python::Py<ExactCount> PoolDmas(const PoolParams& pool, const CallValue& inp,
                                const CallValue& out);
python::Py<ExactCount> AdaptivePoolDmas(const CallValue& inp,
                                        const CallValue& out);

// Receptive field (torchscan/modules/receptive.py).

// (1.0, 1.0, 0.0): the field of every module that keeps positions.
ReceptiveField IdentityField();
python::Py<ReceptiveField> ConvTransposeField(const ConvParams& conv);
// `dilation` nullptr when the module has no dilation attribute (AvgPool).
python::Py<ReceptiveField> KernelField(const HyperParameter& kernel_size,
                                       const HyperParameter* dilation,
                                       const HyperParameter& stride,
                                       const HyperParameter& padding);
python::Py<ReceptiveField> AdaptivePoolField(const CallValue& inp,
                                             const CallValue& out);

}  // namespace torchscan::formulas::module_internal

#endif  // TORCHSCAN_FORMULAS_MODULE_FAMILY_FORMULAS_H_
