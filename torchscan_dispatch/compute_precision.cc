#include "torchscan_dispatch/compute_precision.h"

#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <cstddef>
#include <cstdint>
#include <exception>

namespace torchscan::dispatch {
namespace {

using report::Precision;

constexpr int kNoFloat = 0;
constexpr int kHalf = 1;
constexpr int kBFloat16 = 2;
constexpr int kFloat = 3;
constexpr int kDouble = 4;

int FloatWidth(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Half:
    case c10::ScalarType::ComplexHalf:
      return kHalf;
    case c10::ScalarType::BFloat16:
      return kBFloat16;
    case c10::ScalarType::Float:
    case c10::ScalarType::ComplexFloat:
      return kFloat;
    case c10::ScalarType::Double:
    case c10::ScalarType::ComplexDouble:
      return kDouble;
    default:
      return kNoFloat;
  }
}

// The promoted width of two floating widths: fp16 with bf16 is fp32.
int Promote(int a, int b) {
  if ((a == kHalf && b == kBFloat16) || (a == kBFloat16 && b == kHalf)) {
    return kFloat;
  }
  return a > b ? a : b;
}

bool IsInt8(c10::ScalarType dtype) {
  return dtype == c10::ScalarType::Char || dtype == c10::ScalarType::Byte ||
         dtype == c10::ScalarType::QInt8 || dtype == c10::ScalarType::QUInt8;
}

// NOTE [When float32 products run as TF32]
// cuBLAS products follow Context::allowTF32CuBLAS (the legacy allow_tf32
// flag, set_float32_matmul_precision and the newer fp32_precision settings
// all land there), except inside an at::NoTF32Guard (which PyTorch holds
// where it needs IEEE results). cuDNN convolutions follow
// allowTF32CuDNN(CONV). Reading a setting never fails the workload: if
// PyTorch refuses to answer (a mix of legacy and new settings it rejects),
// the product is float32, which is what the call then runs in.
bool CublasUsesTf32() {
  try {
    return at::globalContext().allowTF32CuBLAS() &&
           !at::NoTF32Guard::should_disable_tf32();
  } catch (const std::exception&) {
    return false;
  }
}

bool CudnnConvolutionUsesTf32() {
  try {
    return at::globalContext().allowTF32CuDNN(at::Float32Op::CONV);
  } catch (const std::exception&) {
    return false;
  }
}

Precision OfWidth(int width) {
  switch (width) {
    case kHalf:
      return Precision::kFp16;
    case kBFloat16:
      return Precision::kBf16;
    case kFloat:
      return Precision::kFp32;
    case kDouble:
      return Precision::kFp64;
    default:
      return Precision::kUnknown;
  }
}

void AddValue(const c10::IValue& value, PrecisionEvidence& evidence,
              bool& on_cuda) {
  if (value.isTensor()) {
    AddPrecisionTensor(value.toTensor(), evidence, on_cuda);
  } else if (value.isList()) {
    for (const c10::IValue& item : value.toListRef()) {
      if (item.isTensor())
        AddPrecisionTensor(item.toTensor(), evidence, on_cuda);
    }
  }
}

}  // namespace

void AddPrecisionTensor(const at::Tensor& tensor, PrecisionEvidence& evidence,
                        bool& on_cuda) {
  if (!tensor.defined()) return;
  const c10::TensorImpl& impl = *tensor.unsafeGetTensorImpl();
  evidence.Add(impl.dtype().toScalarType(), impl.dim() == 0);
  on_cuda = on_cuda || impl.is_cuda();
}

Precision DecidePrecision(const OperatorInfo& info,
                          const PrecisionEvidence& evidence, bool on_cuda) {
  return evidence.Decide(
      info, on_cuda ? c10::DeviceType::CUDA : c10::DeviceType::CPU);
}

void PrecisionEvidence::Add(c10::ScalarType dtype, bool zero_dim) {
  if (c10::isFloat8Type(dtype)) {
    fp8_ = true;
  } else if (dtype == c10::ScalarType::Float4_e2m1fn_x2) {
    fp4_ = true;
  } else if (IsInt8(dtype)) {
    int8_ = true;
  } else if (const int width = FloatWidth(dtype); width != kNoFloat) {
    int& widest = zero_dim ? widest_zero_dim_ : widest_;
    widest = widest == kNoFloat ? width : Promote(widest, width);
  }
}

Precision PrecisionEvidence::Decide(
    const OperatorInfo& info, std::optional<c10::DeviceType> device) const {
  if (fp4_) return Precision::kUnknown;
  if (fp8_) return Precision::kFp8;
  if (info.precision_rule == PrecisionRule::kInt8) return Precision::kInt8;
  const int width = widest_ != kNoFloat ? widest_ : widest_zero_dim_;
  if (width == kFloat && info.precision_rule != PrecisionRule::kInputs) {
    if (!device) return Precision::kUnknown;
    if (*device != c10::DeviceType::CUDA) return Precision::kFp32;
    const bool tf32 = info.precision_rule == PrecisionRule::kCublasProduct
                          ? CublasUsesTf32()
                          : CudnnConvolutionUsesTf32();
    return tf32 ? Precision::kTf32 : Precision::kFp32;
  }
  if (width != kNoFloat) return OfWidth(width);
  return int8_ ? Precision::kInt8 : Precision::kUnknown;
}

Precision ComputePrecision(const OperatorInfo& info,
                           c10::ArrayRef<c10::IValue> arguments) {
  PrecisionEvidence evidence;
  bool on_cuda = false;
  // The arguments that may hold a tensor (NOTE [Arguments the precision scan
  // reads] in operator_info.h), then any past the 64th.
  const std::size_t count = arguments.size();
  std::uint64_t bits = info.tensor_arguments;
  if (count < 64) bits &= (std::uint64_t{1} << count) - 1;
  for (; bits != 0; bits &= bits - 1) {
    AddValue(arguments[__builtin_ctzll(bits)], evidence, on_cuda);
  }
  for (std::size_t i = 64; i < count; ++i) {
    AddValue(arguments[i], evidence, on_cuda);
  }
  return DecidePrecision(info, evidence, on_cuda);
}

}  // namespace torchscan::dispatch
