#include "torchscan_dispatch/compute_precision.h"

#include <ATen/Context.h>
#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/ones.h>
#include <c10/core/TensorOptions.h>

#include <vector>

#include "gtest/gtest.h"

namespace torchscan::dispatch {
namespace {

using report::Precision;

OperatorInfo WithRule(PrecisionRule rule) {
  OperatorInfo info;
  info.precision_rule = rule;
  return info;
}

Precision Of(const OperatorInfo& info, std::vector<c10::IValue> arguments) {
  return ComputePrecision(info, arguments);
}

Precision OnCuda(PrecisionRule rule, c10::ScalarType dtype) {
  PrecisionEvidence evidence;
  evidence.Add(dtype, false);
  evidence.Add(dtype, false);
  return evidence.Decide(WithRule(rule), c10::DeviceType::CUDA);
}

// Restores the TF32 settings a test changes.
class Tf32Settings : public ::testing::Test {
 protected:
  void SetUp() override {
    cublas_ = at::globalContext().allowTF32CuBLAS();
    cudnn_ = at::globalContext().allowTF32CuDNN();
  }
  void TearDown() override {
    at::globalContext().setAllowTF32CuBLAS(cublas_);
    at::globalContext().setAllowTF32CuDNN(cudnn_);
  }

 private:
  bool cublas_ = false;
  bool cudnn_ = false;
};

TEST(ComputePrecisionTest, FloatingDtypesOnTheCpu) {
  const OperatorInfo mm = WithRule(PrecisionRule::kCublasProduct);
  const auto ones = [](c10::ScalarType dtype) {
    return at::ones({2, 2}, at::dtype(dtype));
  };
  EXPECT_EQ(Of(mm, {ones(at::kFloat), ones(at::kFloat)}), Precision::kFp32);
  EXPECT_EQ(Of(mm, {ones(at::kBFloat16), ones(at::kBFloat16)}),
            Precision::kBf16);
  EXPECT_EQ(Of(mm, {ones(at::kHalf), ones(at::kHalf)}), Precision::kFp16);
  EXPECT_EQ(Of(mm, {ones(at::kDouble), ones(at::kDouble)}), Precision::kFp64);
  EXPECT_EQ(Of(mm, {ones(at::kComplexFloat), ones(at::kComplexFloat)}),
            Precision::kFp32);
  // Type promotion: the widest dimensioned tensor decides; bf16 with fp16
  // is fp32; a zero-dimensional tensor does not widen a dimensioned one.
  const OperatorInfo add = WithRule(PrecisionRule::kInputs);
  EXPECT_EQ(Of(add, {ones(at::kBFloat16), ones(at::kFloat)}), Precision::kFp32);
  EXPECT_EQ(Of(add, {ones(at::kBFloat16), ones(at::kHalf)}), Precision::kFp32);
  EXPECT_EQ(
      Of(add, {ones(at::kBFloat16), at::ones({}, at::dtype(at::kDouble))}),
      Precision::kBf16);
  EXPECT_EQ(Of(add, {at::ones({}, at::dtype(at::kDouble))}), Precision::kFp64);
  // Tensor lists count; undefined tensors and non-tensors do not.
  EXPECT_EQ(Of(add, {c10::List<at::Tensor>({ones(at::kHalf)}), at::Tensor(),
                     c10::IValue(3)}),
            Precision::kFp16);
}

TEST(ComputePrecisionTest, LowPrecisionProducts) {
  const OperatorInfo inputs = WithRule(PrecisionRule::kInputs);
  const at::Tensor fp8 = at::ones({16, 16}).to(at::kFloat8_e4m3fn);
  const at::Tensor scale = at::ones({});
  // _scaled_mm: float32 scales do not make an fp8 product float32.
  EXPECT_EQ(Of(inputs, {fp8, fp8, scale, scale}), Precision::kFp8);
  // _int_mm: int8 by int8.
  const at::Tensor int8 = at::ones({16, 16}, at::dtype(at::kChar));
  EXPECT_EQ(Of(inputs, {int8, int8}), Precision::kInt8);
  // _weight_int8pack_mm: bf16 activations times int8 weights run in bf16.
  const at::Tensor activations = at::ones({4, 16}, at::dtype(at::kBFloat16));
  EXPECT_EQ(
      Of(inputs, {activations, int8, at::ones({16}, at::dtype(at::kBFloat16))}),
      Precision::kBf16);
  // Dynamic quantization quantizes float32 activations to int8 itself.
  EXPECT_EQ(Of(WithRule(PrecisionRule::kInt8), {at::ones({4, 16})}),
            Precision::kInt8);
  // Integer products other than 8-bit have no table precision.
  const at::Tensor int64 = at::ones({2, 2}, at::dtype(at::kLong));
  EXPECT_EQ(Of(inputs, {int64, int64}), Precision::kUnknown);
}

TEST_F(Tf32Settings, Float32ProductsOnCudaFollowTheTf32Settings) {
  at::globalContext().setAllowTF32CuBLAS(true);
  EXPECT_EQ(OnCuda(PrecisionRule::kCublasProduct, at::kFloat),
            Precision::kTf32);
  {
    at::NoTF32Guard ieee;
    EXPECT_EQ(OnCuda(PrecisionRule::kCublasProduct, at::kFloat),
              Precision::kFp32);
  }
  // Not a cuBLAS GEMM (mv, dot, attention kernels): float32.
  EXPECT_EQ(OnCuda(PrecisionRule::kInputs, at::kFloat), Precision::kFp32);
  // Other dtypes are what they are.
  EXPECT_EQ(OnCuda(PrecisionRule::kCublasProduct, at::kBFloat16),
            Precision::kBf16);
  at::globalContext().setAllowTF32CuBLAS(false);
  EXPECT_EQ(OnCuda(PrecisionRule::kCublasProduct, at::kFloat),
            Precision::kFp32);

  at::globalContext().setAllowTF32CuDNN(true);
  EXPECT_EQ(OnCuda(PrecisionRule::kCudnnConvolution, at::kFloat),
            Precision::kTf32);
  at::globalContext().setAllowTF32CuDNN(false);
  EXPECT_EQ(OnCuda(PrecisionRule::kCudnnConvolution, at::kFloat),
            Precision::kFp32);
}

TEST_F(Tf32Settings, Float32ProductsOffCudaOrOnAnUnknownDeviceAreNotTf32) {
  at::globalContext().setAllowTF32CuBLAS(true);
  PrecisionEvidence evidence;
  evidence.Add(at::kFloat, false);
  const OperatorInfo mm = WithRule(PrecisionRule::kCublasProduct);
  EXPECT_EQ(evidence.Decide(mm, c10::DeviceType::CPU), Precision::kFp32);
  // A compiled graph without a device: could be either, so unknown.
  EXPECT_EQ(evidence.Decide(mm, std::nullopt), Precision::kUnknown);
  EXPECT_EQ(evidence.Decide(WithRule(PrecisionRule::kInputs), std::nullopt),
            Precision::kFp32);
}

}  // namespace
}  // namespace torchscan::dispatch
