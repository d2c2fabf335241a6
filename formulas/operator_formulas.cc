#include "formulas/operator_formulas.h"

#include <array>

#include "formulas/attention_formulas.h"
#include "formulas/convolution_formulas.h"
#include "formulas/cpu_fused_formulas.h"
#include "formulas/fused_layer_formulas.h"
#include "formulas/matmul_formulas.h"
#include "formulas/packet_table.h"
#include "formulas/quantized_formulas.h"

namespace torchscan::formulas {
namespace {

constexpr FormulaOrigin kParity = FormulaOrigin::kFlopCounterMode;
constexpr FormulaOrigin kCorrected = FormulaOrigin::kCorrected;
constexpr FormulaOrigin kBeyond = FormulaOrigin::kBeyondFlopCounterMode;

constexpr std::uint32_t Bits(std::initializer_list<int> indices) {
  std::uint32_t bits = 0;
  for (int index : indices) bits |= std::uint32_t{1} << index;
  return bits;
}

constexpr auto kTable = std::to_array<OperatorFormulaEntry>({
    {"_quantized::_wrapped_quantized_linear_prepacked", &PackedLinearFlops,
     kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"_quantized::conv2d", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"_quantized::conv2d_relu", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"_quantized::conv3d", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"_quantized::conv3d_relu", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"_quantized::conv_transpose1d", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"_quantized::conv_transpose2d", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"_quantized::linear", &PackedLinearFlops, kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"_quantized::linear_dynamic", &PackedLinearFlops, kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"_quantized::wrapped_fbgemm_linear_fp16_weight", &PackedLinearFlops,
     kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"_quantized::wrapped_quantized_linear", &PackedLinearFlops, kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},

    {"aten::_addmm_activation", &AddmmFlops, kBeyond,
     "addmm fused with ReLU/GELU: 2*m*n*k of mat1 @ mat2"},
    {"aten::_convolution", &ConvolutionFlops, kParity,
     "2 * prod(out spatial, or in spatial if transposed) * prod(kernel) * N * "
     "w[0] * w[1]"},
    {"aten::_dyn_quant_matmul_4bit", &WeightPackedMatmulFlops, kBeyond,
     "weight-only quantized matmul: 2*m*k*n, k from self [m,k], n from the "
     "result [m,n] (the packed weight's layout is the kernel's); scales, zero "
     "points not counted"},

    {"aten::_efficient_attention_backward", &EfficientAttentionBackwardFlops,
     kCorrected,
     "SDPA backward on BSHD (transposed to BHSD) or packed sequences; "
     "FlopCounterMode reads BSHD as BHSD",
     Bits({6, 7})},
    {"aten::_efficient_attention_forward", &EfficientAttentionForwardFlops,
     kCorrected,
     "SDPA forward on BSHD (transposed to BHSD) or packed sequences; "
     "FlopCounterMode reads BSHD as BHSD",
     Bits({4, 5})},
    {"aten::_flash_attention_backward", &FlashAttentionBackwardFlops,
     kCorrected,
     "SDPA backward on BSHD (transposed to BHSD) or packed sequences; "
     "FlopCounterMode reads BSHD as BHSD",
     Bits({6, 7})},
    {"aten::_flash_attention_forward", &FlashAttentionForwardFlops, kCorrected,
     "SDPA forward on BSHD (transposed to BHSD) or packed sequences; "
     "FlopCounterMode reads BSHD as BHSD",
     Bits({3, 4})},
    {"aten::_grouped_mm", &GroupedMmFlops, kBeyond,
     "2 * sum over groups of m_g*k_g*n_g (mixture-of-experts layers); reads "
     "offs",
     Bits({2})},
    {"aten::_int_mm", &MmFlops, kBeyond, "2*m*n*k (int8 matmul)"},
    {"aten::_native_multi_head_attention", &NativeMultiHeadAttentionFlops,
     kBeyond,
     "MHA fast path: 2*E*E*(rows of q, k, v) + 4*B*L*S*E + 2*rows(q)*E*E"},
    {"aten::_scaled_dot_product_cudnn_attention", &SdpaForwardFlops, kParity,
     "2*b*hq*sq*sk*(d + dv)"},
    {"aten::_scaled_dot_product_cudnn_attention_backward", &SdpaBackwardFlops,
     kParity, "2*b*hq*sq*sk*(3*d + 2*dv)"},
    {"aten::_scaled_dot_product_efficient_attention", &SdpaForwardFlops,
     kParity, "2*b*hq*sq*sk*(d + dv)"},
    {"aten::_scaled_dot_product_efficient_attention_backward",
     &SdpaBackwardFlops, kParity, "2*b*hq*sq*sk*(3*d + 2*dv)"},
    {"aten::_scaled_dot_product_flash_attention", &SdpaForwardFlops, kParity,
     "2*b*hq*sq*sk*(d + dv)"},
    {"aten::_scaled_dot_product_flash_attention_backward", &SdpaBackwardFlops,
     kParity, "2*b*hq*sq*sk*(3*d + 2*dv)"},
    {"aten::_scaled_dot_product_flash_attention_for_cpu", &SdpaForwardFlops,
     kBeyond, "the CPU SDPA kernel: 2*b*hq*sq*sk*(d + dv)"},
    {"aten::_scaled_dot_product_flash_attention_for_cpu_backward",
     &SdpaBackwardFlops, kBeyond, "2*b*hq*sq*sk*(3*d + 2*dv)"},
    {"aten::_scaled_dot_product_fused_attention_overrideable",
     &SdpaForwardFlops, kBeyond, "2*b*hq*sq*sk*(d + dv)"},
    {"aten::_scaled_dot_product_fused_attention_overrideable_backward",
     &SdpaBackwardFlops, kBeyond, "2*b*hq*sq*sk*(3*d + 2*dv)"},

    {"aten::_scaled_grouped_mm", &ScaledGroupedMmFlops, kBeyond,
     "fp8 grouped matmul: 2 * sum over groups of m_g*k_g*n_g, as _grouped_mm; "
     "reads offs; scales and bias not counted",
     Bits({4})},
    {"aten::_scaled_grouped_mm_v2", &ScaledGroupedMmV2Flops, kBeyond,
     "as _scaled_grouped_mm (offs is argument 8); scales and bias not counted",
     Bits({8})},
    {"aten::_scaled_mm", &ScaledMmFlops, kParity,
     "2*m*n*k of self @ mat2; scales and bias not counted"},
    {"aten::_scaled_mm_v2", &ScaledMmFlops, kBeyond,
     "2*m*n*k of self @ mat2 (scaled matmul with scale recipes); scales and "
     "bias not counted"},
    {"aten::_slow_conv2d_backward", &SlowConv2dBackwardFlops, kBeyond,
     "one forward convolution per requested gradient (input, weight)"},
    {"aten::_slow_conv2d_forward", &NonTransposedConvolutionFlops, kCorrected,
     "convolution, never transposed; FlopCounterMode raises TypeError (its "
     "formula needs a 7th argument)"},
    {"aten::_transformer_encoder_layer_fwd", &TransformerEncoderLayerFlops,
     kBeyond,
     "encoder-layer fast path: self-attention as MHA + 2*rows*(F*E + E*F)"},
    {"aten::_weight_int4pack_mm", &WeightPackedMatmulFlops, kBeyond,
     "weight-only quantized matmul: 2*m*k*n, k from self [m,k], n from the "
     "result [m,n] (the packed weight's layout is the kernel's); scales, zero "
     "points not counted"},
    {"aten::_weight_int4pack_mm_for_cpu", &WeightPackedMatmulFlops, kBeyond,
     "weight-only quantized matmul: 2*m*k*n, k from self [m,k], n from the "
     "result [m,n] (the packed weight's layout is the kernel's); scales, zero "
     "points not counted"},
    {"aten::_weight_int4pack_mm_with_scales_and_zeros",
     &WeightPackedMatmulFlops, kBeyond,
     "weight-only quantized matmul: 2*m*k*n, k from self [m,k], n from the "
     "result [m,n] (the packed weight's layout is the kernel's); scales, zero "
     "points not counted"},
    {"aten::_weight_int8pack_mm", &WeightPackedMatmulFlops, kBeyond,
     "weight-only quantized matmul: 2*m*k*n, k from self [m,k], n from the "
     "result [m,n] (the packed weight's layout is the kernel's); scales, zero "
     "points not counted"},
    {"aten::_wrapped_quantized_linear_prepacked", &PackedLinearFlops, kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"aten::addbmm", &AddbmmFlops, kBeyond, "2*b*n*p*m of batch1 @ batch2"},
    {"aten::addmm", &AddmmFlops, kParity,
     "2*m*n*k of mat1 [m,k] @ mat2 [k,n]; bias not counted"},
    {"aten::addmv", &AddmvFlops, kBeyond, "2*m*n of mat [m,n] @ vec [n]"},
    {"aten::addr", &AddrFlops, kBeyond,
     "2*m*n: the outer product as [m,1] @ [1,n]"},
    {"aten::baddbmm", &BaddbmmFlops, kParity,
     "2*b*m*n*k of batch1 [b,m,k] @ batch2 [b,k,n]; bias not counted"},
    {"aten::bmm", &BmmFlops, kParity,
     "2*b*m*n*k of self [b,m,k] @ mat2 [b,k,n]"},
    {"aten::convolution", &ConvolutionFlops, kParity,
     "2 * prod(out spatial, or in spatial if transposed) * prod(kernel) * N * "
     "w[0] * w[1]"},
    {"aten::convolution_backward", &ConvolutionBackwardFlops, kCorrected,
     "one forward convolution per requested gradient (input, weight); "
     "FlopCounterMode counts the weight gradient `groups` times"},
    {"aten::convolution_backward_overrideable",
     &ConvolutionBackwardOverrideableFlops, kBeyond,
     "one forward convolution per requested gradient (input, weight)"},
    {"aten::convolution_overrideable", &ConvolutionFlops, kParity,
     "as aten::convolution"},
    {"aten::cudnn_convolution", &NonTransposedConvolutionFlops, kCorrected,
     "convolution, never transposed; FlopCounterMode takes `benchmark` for "
     "`transposed`"},
    {"aten::dot", &DotFlops, kBeyond, "2*n"},
    {"aten::fbgemm_linear_fp16_weight", &PackedLinearFlops, kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"aten::fbgemm_linear_fp16_weight_fp32_activation", &PackedLinearFlops,
     kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"aten::fbgemm_linear_int8_weight", &PackedLinearFlops, kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"aten::fbgemm_linear_int8_weight_fp32_activation", &PackedLinearFlops,
     kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"aten::mkldnn_convolution", &NonTransposedConvolutionFlops, kBeyond,
     "convolution, never transposed"},
    {"aten::mkldnn_rnn_layer", &MkldnnRnnLayerFlops, kBeyond,
     "LSTM layer: 2 * rows * (numel(w_ih) + numel(w_hh))"},
    {"aten::mkldnn_rnn_layer_backward", &MkldnnRnnLayerBackwardFlops, kBeyond,
     "LSTM layer backward: 4 * rows * (numel(w_ih) + numel(w_hh))"},
    {"aten::mm", &MmFlops, kParity, "2*m*n*k of self [m,k] @ mat2 [k,n]"},
    {"aten::mv", &MvFlops, kBeyond, "2*m*n of self [m,n] @ vec [n]"},
    {"aten::vdot", &DotFlops, kBeyond, "2*n"},
    {"higher_order::flex_attention", &SdpaForwardFlops, kParity,
     "flex attention (a compiled graph's higher-order operator): "
     "2*b*hq*sq*sk*(d + dv), as SDPA"},
    {"higher_order::flex_attention_backward", &FlexAttentionBackwardFlops,
     kParity,
     "flex attention backward (compiled): 2*b*hq*sq*sk*(3*d + 2*dv), as "
     "SDPA's"},
    {"mkl::_mkl_linear", &PackedLinearFlops, kBeyond,
     "frozen linear (MKL): 2 * numel(Y) * X[-1]"},
    {"mkldnn::_convolution_pointwise", &PointwiseConvolutionFlops, kBeyond,
     "frozen convolution + post-op (oneDNN): the convolution's count"},
    {"mkldnn::_convolution_pointwise_", &InPlacePointwiseConvolutionFlops,
     kBeyond,
     "frozen convolution + in-place binary post-op: the convolution's"},
    {"mkldnn::_convolution_transpose_pointwise",
     &PointwiseTransposedConvolutionFlops, kBeyond,
     "frozen transposed convolution + post-op: the convolution's count"},
    {"mkldnn::_linear_pointwise", &PackedLinearFlops, kBeyond,
     "frozen linear + post-op (oneDNN): 2 * numel(Y) * X[-1]"},
    {"onednn::qconv1d_pointwise", &QuantizedConvolutionFlops, kBeyond,
     "quantized convolution (oneDNN): the convolution's count"},

    {"onednn::qconv2d_pointwise", &QuantizedConvolutionFlops, kBeyond,
     "quantized convolution (oneDNN): the convolution's count"},

    {"onednn::qconv3d_pointwise", &QuantizedConvolutionFlops, kBeyond,
     "quantized convolution (oneDNN): the convolution's count"},
    {"onednn::qconv_pointwise", &QuantizedConvolutionFlops, kBeyond,
     "quantized convolution (oneDNN): the convolution's count"},
    {"onednn::qlinear_pointwise", &PackedLinearFlops, kBeyond,
     "quantized linear (oneDNN): 2 * numel(Y) * qx[-1]"},
    {"quantized::conv1d", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"quantized::conv1d_dynamic", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"quantized::conv1d_relu", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"quantized::conv2d", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"quantized::conv2d_add", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"quantized::conv2d_add_relu", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"quantized::conv2d_dynamic", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"quantized::conv2d_relu", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"quantized::conv3d", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"quantized::conv3d_dynamic", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"quantized::conv3d_relu", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"quantized::conv_transpose1d", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"quantized::conv_transpose1d_dynamic", &PackedParamsConvolutionFlops,
     kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"quantized::conv_transpose2d", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"quantized::conv_transpose2d_dynamic", &PackedParamsConvolutionFlops,
     kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"quantized::conv_transpose3d", &PackedParamsConvolutionFlops, kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"quantized::conv_transpose3d_dynamic", &PackedParamsConvolutionFlops,
     kBeyond,
     "not counted, the report is partial: kernel size, stride, padding and "
     "groups are inside the packed weight object, which formulas cannot read"},
    {"quantized::linear", &PackedLinearFlops, kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"quantized::linear_dynamic", &PackedLinearFlops, kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"quantized::linear_dynamic_fp16", &PackedLinearFlops, kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"quantized::linear_dynamic_fp16_unpacked_weight", &PackedLinearFlops,
     kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"quantized::linear_leaky_relu", &PackedLinearFlops, kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"quantized::linear_relu", &PackedLinearFlops, kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"quantized::linear_relu_dynamic", &PackedLinearFlops, kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"quantized::linear_relu_dynamic_fp16", &PackedLinearFlops, kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"quantized::linear_tanh", &PackedLinearFlops, kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"quantized::linear_with_input_q_dq_qweight_dq_output_fp32",
     &PackedLinearFlops, kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
    {"quantized::linear_with_input_q_dq_qweight_dq_relu_output_fp32",
     &PackedLinearFlops, kBeyond,
     "quantized linear: 2 * numel(Y) * X[-1] (the packed weight is not read); "
     "quantization, scales, zero points, bias and the fused activation not "
     "counted"},
});

static_assert(IsSortedByPacket(kTable),
              "kTable must be sorted by packet name, without duplicates");

}  // namespace

const OperatorFormulaEntry* FindOperatorFormula(absl::string_view packet) {
  return FindByPacket(kTable, packet);
}

absl::Span<const OperatorFormulaEntry> AllOperatorFormulas() { return kTable; }

absl::string_view FormulaOriginName(FormulaOrigin origin) {
  switch (origin) {
    case FormulaOrigin::kFlopCounterMode:
      return "FlopCounterMode";
    case FormulaOrigin::kCorrected:
      return "corrected";
    case FormulaOrigin::kBeyondFlopCounterMode:
      return "beyond FlopCounterMode";
  }
  return "";
}

}  // namespace torchscan::formulas
