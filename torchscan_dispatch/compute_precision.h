// The compute precision of an operator call: which peak of the device table
// (python/torchscan_dispatch/devices.py) its FLOPs are measured against in a
// precision-aware MFU.
//
// Read from the dtypes of the call's tensor arguments, once per counted call
// (never for calls without a formula), without allocating:
//  - any float8 tensor: fp8 (_scaled_mm, _scaled_grouped_mm: their float32
//    scales do not make the product float32); a float4 tensor (mxfp4
//    _scaled_mm): unknown, the table has no fp4 precision;
//  - operators that quantize float activations to int8 themselves
//    (dynamic quantization: quantized::linear_dynamic, fbgemm int8 weights):
//    int8;
//  - else the floating dtype the arithmetic promotes to: the widest floating
//    dtype among tensors with dimensions, zero-dimensional tensors counting
//    only when no tensor has dimensions (PyTorch's type promotion), bf16 and
//    fp16 together giving fp32, complex as its component type. So
//    weight-only quantized products (_weight_int8pack_mm, every
//    _weight_int4pack_mm) are the precision of their activations: their
//    kernels widen the int8 or int4 weight and multiply in the activation's
//    floating type, not on integer tensor cores;
//  - float32 matrix products on CUDA are tf32 when PyTorch lets them use
//    TF32: cuBLAS products (mm, addmm, bmm, baddbmm, addbmm,
//    _addmm_activation) when torch.backends.cuda.matmul allows it
//    (allow_tf32, set_float32_matmul_precision, fp32_precision) outside an
//    at::NoTF32Guard, cuDNN convolutions when torch.backends.cudnn allows it
//    for convolutions. Everywhere else (CPU, meta, other operators such as
//    mv, dot and fused attention) float32 is fp32;
//  - no floating tensor but an 8-bit integer or quantized one (_int_mm,
//    quantized::linear): int8;
//  - anything else (integer products other than 8-bit): unknown.

#ifndef TORCHSCAN_DISPATCH_COMPUTE_PRECISION_H_
#define TORCHSCAN_DISPATCH_COMPUTE_PRECISION_H_

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>
#include <c10/util/ArrayRef.h>

#include <optional>

#include "report/precision.h"
#include "torchscan_dispatch/operator_info.h"

namespace torchscan::dispatch {

// What the tensors of one call say about its precision.
class PrecisionEvidence {
 public:
  // A tensor of dtype `dtype`; `zero_dim` for a tensor without dimensions.
  void Add(c10::ScalarType dtype, bool zero_dim);
  // The precision of a call of `info` with the tensors added: `device` is
  // the call's device type, nullopt when it is not known (a compiled graph's
  // description), which leaves a float32 product that could be tf32
  // unknown.
  report::Precision Decide(const OperatorInfo& info,
                           std::optional<c10::DeviceType> device) const;

 private:
  // Floating widths: 0 none, 1 fp16, 2 bf16, 3 fp32, 4 fp64.
  int widest_ = 0;
  int widest_zero_dim_ = 0;
  bool fp8_ = false;
  bool fp4_ = false;
  bool int8_ = false;
};

// ComputePrecision one tensor at a time, for calls read from typed arguments
// (unboxed_kernels.h): adds tensor argument `tensor` (undefined: nothing),
// reading its dtype, rank and device through the TensorImpl, by reference;
// `on_cuda` becomes true for a CUDA tensor.
void AddPrecisionTensor(const at::Tensor& tensor, PrecisionEvidence& evidence,
                        bool& on_cuda);
// The precision of a call of `info` whose tensors were added to `evidence`.
report::Precision DecidePrecision(const OperatorInfo& info,
                                  const PrecisionEvidence& evidence,
                                  bool on_cuda);

// The precision of a call of `info` with these arguments (schema order).
report::Precision ComputePrecision(const OperatorInfo& info,
                                   c10::ArrayRef<c10::IValue> arguments);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_COMPUTE_PRECISION_H_
