// Every formula against a hand computation written here. The table test at
// the end fails when an entry is added without a case in this file.

#include "formulas/operator_formulas.h"

#include <map>
#include <set>
#include <string>

#include "formulas/ignored_operators.h"
#include "gtest/gtest.h"

namespace torchscan::formulas {
namespace {

using V = OperatorValue;

V T(Shape shape) { return V::Tensor(std::move(shape)); }
V I(std::int64_t value) { return V::Int(value); }
V B(bool value) { return V::Bool(value); }
V L(std::vector<std::int64_t> values) { return V::IntList(std::move(values)); }
V Mask(bool a, bool b, bool c) { return V::BoolList({a, b, c}); }
V Offsets(std::vector<std::int64_t> values) {
  V offsets = T({static_cast<std::int64_t>(values.size())});
  offsets.values = std::move(values);
  return offsets;
}
V None() { return V::None(); }

struct Case {
  std::vector<V> arguments;
  std::vector<V> results;
  Count expected;
};

absl::StatusOr<Count> Evaluate(absl::string_view packet, const Case& c) {
  const OperatorFormulaEntry* entry = FindOperatorFormula(packet);
  if (entry == nullptr) return absl::NotFoundError(packet);
  return entry->formula(OperatorCall{c.arguments, c.results});
}

// [m,k] @ [k,n]: m*n dot products of length k; 2 FLOPs per multiply-add.
Count Mm(Count m, Count k, Count n) { return 2 * m * n * k; }
// The two attention products of one (batch, head): [sq,d] @ [d,sk] and
// [sq,sk] @ [sk,dv].
Count Attention(Count bh, Count sq, Count sk, Count d, Count dv) {
  return bh * (Mm(sq, d, sk) + Mm(sq, sk, dv));
}
// Backward: recompute scores, grad scores, grad v, grad q, grad k.
Count AttentionBackward(Count bh, Count sq, Count sk, Count d, Count dv) {
  return bh * (Mm(sq, d, sk) + Mm(sq, dv, sk) + Mm(sk, sq, dv) + Mm(sq, sk, d) +
               Mm(d, sq, sk));
}
// A 2-D convolution: each of the N*Cout*Ho*Wo outputs takes (Cin/groups)*kh*kw
// multiply-adds.
Count Conv2d(Count n, Count cin_per_group, Count cout, Count ho, Count wo,
             Count kh, Count kw) {
  return 2 * n * cout * ho * wo * cin_per_group * kh * kw;
}

std::map<std::string, std::vector<Case>> Cases() {
  std::map<std::string, std::vector<Case>> cases;
  // --- matrix products
  cases["aten::mm"] = {{{T({2, 3}), T({3, 4})}, {T({2, 4})}, Mm(2, 3, 4)}};
  // Mixture-of-experts products: 4 experts, offs the cumulative group ends.
  // Rows grouped, [64,32] @ [4,32,16] (the example: 65,536); the
  // last 8 rows past offs[-1] = 56 in no group.
  cases["aten::_grouped_mm"] = {
      {{T({64, 32}), T({4, 32, 16}), Offsets({16, 32, 48, 64})},
       {T({64, 16})},
       Mm(16, 32, 16) * 4},
      {{T({64, 32}), T({4, 32, 16}), Offsets({10, 10, 40, 56})},
       {T({64, 16})},
       Mm(10, 32, 16) + Mm(30, 32, 16) + Mm(16, 32, 16)},
      // Batched, no offs: [4,8,32] @ [4,32,16].
      {{T({4, 8, 32}), T({4, 32, 16}), None()},
       {T({4, 8, 16})},
       4 * Mm(8, 32, 16)},
      // Columns grouped: [4,8,32] @ [32,64].
      {{T({4, 8, 32}), T({32, 64}), Offsets({16, 32, 48, 64})},
       {T({8, 64})},
       4 * Mm(8, 32, 16)},
      // Inner dimension grouped (the weight gradient): [32,64] @ [64,16].
      {{T({32, 64}), T({64, 16}), Offsets({16, 32, 48, 64})},
       {T({4, 32, 16})},
       4 * Mm(32, 16, 16)}};
  cases["aten::_int_mm"] = {
      {{T({32, 16}), T({16, 8})}, {T({32, 8})}, Mm(32, 16, 8)}};
  cases["aten::addmm"] = {
      {{T({5}), T({7, 3}), T({3, 5}), I(1), I(1)}, {T({7, 5})}, Mm(7, 3, 5)}};
  cases["aten::_addmm_activation"] = {
      {{T({5}), T({7, 3}), T({3, 5}), I(1), I(1), B(true)},
       {T({7, 5})},
       Mm(7, 3, 5)}};
  cases["aten::bmm"] = {
      {{T({4, 2, 3}), T({4, 3, 6})}, {T({4, 2, 6})}, 4 * Mm(2, 3, 6)}};
  cases["aten::baddbmm"] = {{{T({4, 2, 6}), T({4, 2, 3}), T({4, 3, 6})},
                             {T({4, 2, 6})},
                             4 * Mm(2, 3, 6)}};
  cases["aten::addbmm"] = {
      {{T({2, 6}), T({4, 2, 3}), T({4, 3, 6})}, {T({2, 6})}, 4 * Mm(2, 3, 6)}};
  cases["aten::_scaled_mm"] = {
      {{T({16, 32}), T({32, 8}), T({}), T({}), None(), None()},
       {T({16, 8})},
       Mm(16, 32, 8)}};
  cases["aten::_scaled_mm_v2"] = {
      {{T({16, 32}), T({32, 8}), V::OfKind(V::Kind::kTensorList), L({0}),
        L({0}), V::OfKind(V::Kind::kTensorList), L({0}), L({0}), None(),
        None()},
       {T({16, 8})},
       Mm(16, 32, 8)}};
  // fp8 experts: _scaled_grouped_mm(self, mat2, scale_a, scale_b, offs, ...)
  // groups as _grouped_mm does; the scales are not counted.
  cases["aten::_scaled_grouped_mm"] = {
      {{T({64, 32}), T({4, 32, 16}), T({64}), T({4, 16}),
        Offsets({10, 10, 40, 56})},
       {T({64, 16})},
       Mm(10, 32, 16) + Mm(30, 32, 16) + Mm(16, 32, 16)},
      {{T({4, 8, 32}), T({4, 32, 16}), T({4, 8}), T({4, 16}), None()},
       {T({4, 8, 16})},
       4 * Mm(8, 32, 16)}};
  // _v2: scale lists and their recipes and swizzles come first; offs is 8.
  {
    const V scales = V::OfKind(V::Kind::kTensorList);
    cases["aten::_scaled_grouped_mm_v2"] = {
        {{T({64, 32}), T({4, 32, 16}), scales, L({0}), L({0}), scales, L({0}),
          L({0}), Offsets({16, 32, 48, 64})},
         {T({64, 16})},
         4 * Mm(16, 32, 16)}};
  }
  // Weight-only quantized products, x [8,64] @ W^T for W [16,64]: whatever
  // the packed weight's stored shape, k = 64 and n = 16.
  const V x = T({8, 64});
  const std::vector<V> packed_result = {T({8, 16})};
  cases["aten::_weight_int8pack_mm"] = {
      {{x, T({16, 64}), T({16})}, packed_result, Mm(8, 64, 16)}};
  // CUDA layout [n/8, k/(16*innerKTiles), 32, innerKTiles/2], innerKTiles 2.
  cases["aten::_weight_int4pack_mm"] = {
      {{x, T({2, 2, 32, 1}), I(32), T({2, 16, 2})},
       packed_result,
       Mm(8, 64, 16)}};
  // Two 4-bit values per byte: [n, k/2] uint8.
  cases["aten::_weight_int4pack_mm_for_cpu"] = {
      {{x, T({16, 32}), I(32), T({2, 16, 2})}, packed_result, Mm(8, 64, 16)}};
  // Eight 4-bit values per int32: [n, k/8].
  cases["aten::_weight_int4pack_mm_with_scales_and_zeros"] = {
      {{x, T({16, 8}), I(32), T({2, 16}), T({2, 16})},
       packed_result,
       Mm(8, 64, 16)}};
  // One flat buffer of packed values, scales and bias.
  cases["aten::_dyn_quant_matmul_4bit"] = {
      {{x, T({1072}), I(32), I(64), I(16)}, packed_result, Mm(8, 64, 16)}};
  cases["aten::dot"] = {{{T({9}), T({9})}, {T({})}, Mm(1, 9, 1)}};
  cases["aten::vdot"] = {{{T({9}), T({9})}, {T({})}, Mm(1, 9, 1)}};
  cases["aten::mv"] = {{{T({4, 5}), T({5})}, {T({4})}, Mm(4, 5, 1)}};
  cases["aten::addmv"] = {{{T({4}), T({4, 5}), T({5})}, {T({4})}, Mm(4, 5, 1)}};
  cases["aten::addr"] = {
      {{T({4, 5}), T({4}), T({5})}, {T({4, 5})}, Mm(4, 1, 5)}};

  // --- convolutions: input [1,3,32,32], weight [8,3,3,3] -> [1,8,30,30].
  const Count conv = Conv2d(1, 3, 8, 30, 30, 3, 3);
  auto convolution_args = [](bool transposed, std::int64_t groups, Shape w) {
    return std::vector<V>{T({1, 3, 32, 32}), T(std::move(w)), None(),
                          L({1, 1}),         L({0, 0}),       L({1, 1}),
                          B(transposed),     L({0, 0}),       I(groups)};
  };
  cases["aten::convolution"] = {
      {convolution_args(false, 1, {8, 3, 3, 3}), {T({1, 8, 30, 30})}, conv},
      // Transposed: every input point scatters through the kernel. Weight
      // [Cin=3, Cout/groups=8, 3, 3]; output [1,8,34,34].
      {convolution_args(true, 1, {3, 8, 3, 3}),
       {T({1, 8, 34, 34})},
       2 * 1 * 32 * 32 * 3 * 8 * 3 * 3},
  };
  cases["aten::_convolution"] = {
      {convolution_args(false, 1, {8, 3, 3, 3}), {T({1, 8, 30, 30})}, conv}};
  cases["aten::convolution_overrideable"] = {
      {convolution_args(false, 1, {8, 3, 3, 3}), {T({1, 8, 30, 30})}, conv}};
  // Depthwise: 6 groups of one channel each; weight [6,1,3,3].
  cases["aten::convolution"].push_back(
      {{T({2, 6, 10, 10}), T({6, 1, 3, 3}), None(), L({1, 1}), L({0, 0}),
        L({1, 1}), B(false), L({0, 0}), I(6)},
       {T({2, 6, 8, 8})},
       Conv2d(2, 1, 6, 8, 8, 3, 3)});
  // cudnn_convolution(self, weight, padding, stride, dilation, groups,
  // benchmark=true, ...): never transposed, whatever `benchmark` says.
  cases["aten::cudnn_convolution"] = {
      {{T({1, 3, 32, 32}), T({8, 3, 3, 3}), L({0, 0}), L({1, 1}), L({1, 1}),
        I(1), B(true), B(false), B(false)},
       {T({1, 8, 30, 30})},
       conv}};
  cases["aten::_slow_conv2d_forward"] = {
      {{T({1, 3, 32, 32}), T({8, 3, 3, 3}), L({3, 3}), None(), L({1, 1}),
        L({0, 0})},
       {T({1, 8, 30, 30})},
       conv}};
  cases["aten::mkldnn_convolution"] = {
      {{T({1, 3, 32, 32}), T({8, 3, 3, 3}), None(), L({0, 0}), L({1, 1}),
        L({1, 1}), I(1)},
       {T({1, 8, 30, 30})},
       conv}};
  // Backward of the depthwise convolution above: grad_input and grad_weight
  // each cost one forward (FlopCounterMode would count grad_weight 6 times).
  const Count depthwise = Conv2d(2, 1, 6, 8, 8, 3, 3);
  auto backward_args = [](bool input, bool weight) {
    return std::vector<V>{T({2, 6, 8, 8}),
                          T({2, 6, 10, 10}),
                          T({6, 1, 3, 3}),
                          L({6}),
                          L({1, 1}),
                          L({0, 0}),
                          L({1, 1}),
                          B(false),
                          L({0, 0}),
                          I(6),
                          Mask(input, weight, true)};
  };
  cases["aten::convolution_backward"] = {
      {backward_args(true, true),
       {T({2, 6, 10, 10}), T({6, 1, 3, 3}), T({6})},
       2 * depthwise},
      {backward_args(false, true),
       {None(), T({6, 1, 3, 3}), T({6})},
       depthwise},
      {backward_args(false, false), {None(), None(), T({6})}, 0},
  };
  cases["aten::convolution_backward_overrideable"] = {
      {{T({2, 6, 8, 8}), T({2, 6, 10, 10}), T({6, 1, 3, 3}), L({1, 1}),
        L({0, 0}), L({1, 1}), B(false), L({0, 0}), I(6),
        Mask(true, true, false)},
       {T({2, 6, 10, 10}), T({6, 1, 3, 3}), None()},
       2 * depthwise}};
  cases["aten::_slow_conv2d_backward"] = {
      {{T({1, 8, 30, 30}), T({1, 3, 32, 32}), T({8, 3, 3, 3}), L({3, 3}),
        L({1, 1}), L({0, 0}), Mask(false, true, true)},
       {None(), T({8, 3, 3, 3}), T({8})},
       conv}};

  // --- attention: q [2,4,8,16], k/v [2,2,10,16] (grouped: 4 query heads
  // over 2 key/value heads).
  const Count sdpa = Attention(2 * 4, 8, 10, 16, 16);
  const Count sdpa_backward = AttentionBackward(2 * 4, 8, 10, 16, 16);
  const std::vector<V> qkv = {T({2, 4, 8, 16}), T({2, 2, 10, 16}),
                              T({2, 2, 10, 16})};
  const std::vector<V> grad_qkv = {T({2, 4, 8, 16}), T({2, 4, 8, 16}),
                                   T({2, 2, 10, 16}), T({2, 2, 10, 16})};
  for (const char* forward :
       {"aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_efficient_attention",
        "aten::_scaled_dot_product_cudnn_attention",
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        "aten::_scaled_dot_product_fused_attention_overrideable"}) {
    cases[forward] = {{qkv, {T({2, 4, 8, 16})}, sdpa}};
    cases[std::string(forward) + "_backward"] = {{grad_qkv, {}, sdpa_backward}};
  }
  // The raw kernels take [batch, seq, heads, dim].
  const std::vector<V> bshd = {T({2, 8, 4, 16}), T({2, 10, 2, 16}),
                               T({2, 10, 2, 16})};
  cases["aten::_flash_attention_forward"] = {
      {{bshd[0], bshd[1], bshd[2], None(), None(), I(8), I(10)}, {}, sdpa},
      // Packed sequences of lengths 3 and 5 (q) / 4 and 6 (k): [total, H, D].
      {{T({8, 4, 16}), T({10, 2, 16}), T({10, 2, 16}), Offsets({0, 3, 8}),
        Offsets({0, 4, 10}), I(5), I(6)},
       {},
       Attention(4, 3, 4, 16, 16) + Attention(4, 5, 6, 16, 16)},
  };
  V unreadable = T({3});  // offsets of a meta tensor: lengths taken at max
  cases["aten::_flash_attention_forward"].push_back(
      {{T({8, 4, 16}), T({10, 2, 16}), T({10, 2, 16}), unreadable, unreadable,
        I(5), I(6)},
       {},
       2 * Attention(4, 5, 6, 16, 16)});
  cases["aten::_flash_attention_backward"] = {
      {{T({2, 8, 4, 16}), bshd[0], bshd[1], bshd[2], T({2, 8, 4, 16}),
        T({2, 4, 8}), None(), None(), I(8), I(10)},
       {},
       sdpa_backward}};
  cases["aten::_efficient_attention_forward"] = {
      {{bshd[0], bshd[1], bshd[2], None(), None(), None(), I(8), I(10)},
       {},
       sdpa},
      // Packed: [1, total, H, D].
      {{T({1, 8, 4, 16}), T({1, 10, 2, 16}), T({1, 10, 2, 16}), None(),
        Offsets({0, 3, 8}), Offsets({0, 4, 10}), I(5), I(6)},
       {},
       Attention(4, 3, 4, 16, 16) + Attention(4, 5, 6, 16, 16)},
  };
  cases["aten::_efficient_attention_backward"] = {
      {{T({2, 8, 4, 16}), bshd[0], bshd[1], bshd[2], None(), T({2, 8, 4, 16}),
        None(), None(), I(8), I(10)},
       {},
       sdpa_backward}};

  // --- fused layers
  // LSTM layer, input [5 steps, 3 batch, 8], hidden 16: gates G = 64;
  // per row an [8 -> 64] and a [16 -> 64] projection.
  cases["aten::mkldnn_rnn_layer"] = {
      {{T({5, 3, 8}), T({64, 8}), T({64, 16}), T({64}), T({64}), T({3, 16}),
        T({3, 16})},
       {},
       15 * (Mm(1, 8, 64) + Mm(1, 16, 64))}};
  cases["aten::mkldnn_rnn_layer_backward"] = {
      {{T({5, 3, 8}), T({64, 8}), T({64, 16}), T({64}), T({64})},
       {},
       2 * 15 * (Mm(1, 8, 64) + Mm(1, 16, 64))}};
  // MHA: B=2, L=5 queries, S=7 keys, E=16, 4 heads.
  const Count mha = Mm(2 * 5, 16, 16) +
                    2 * Mm(2 * 7, 16, 16) +         // in-projections
                    Attention(2 * 4, 5, 7, 4, 4) +  // attention
                    Mm(2 * 5, 16, 16);              // out-projection
  // --- compiled graphs: flex attention (higher-order operator)
  {
    const V q = T({2, 4, 8, 16}), k = T({2, 4, 32, 16}), v = T({2, 4, 32, 8});
    cases["higher_order::flex_attention"] = {
        {{q, k, v}, {T({2, 4, 8, 8})}, Attention(2 * 4, 8, 32, 16, 8)}};
    // flex_attention_backward(query, key, value, out, logsumexp, grad_out).
    cases["higher_order::flex_attention_backward"] = {
        {{q, k, v, T({2, 4, 8, 8}), T({2, 4, 8}), T({2, 4, 8, 8})},
         {},
         AttentionBackward(2 * 4, 8, 32, 16, 8)},
        // No grad_out: out's shape stands for it.
        {{q, k, v, T({2, 4, 8, 8}), T({2, 4, 8}), None()},
         {},
         AttentionBackward(2 * 4, 8, 32, 16, 8)}};
  }
  // --- frozen and quantized CPU kernels (torch.compile freezing)
  // A packed linear weight's shape is meaningless ([n, 1]): the count reads
  // X [..., k] and Y [..., n] only.
  cases["mkl::_mkl_linear"] = {
      {{T({4, 6, 32}), T({999, 1}), T({16, 32}), T({16}), I(24)},
       {T({4, 6, 16})},
       Mm(4 * 6, 32, 16)}};
  cases["mkldnn::_linear_pointwise"] = {
      {{T({8, 32}), T({16, 32}), None()}, {T({8, 16})}, Mm(8, 32, 16)},
      // The binary overload: X, other, W, B.
      {{T({8, 32}), T({8, 16}), T({16, 32}), None()},
       {T({8, 16})},
       Mm(8, 32, 16)}};
  cases["onednn::qlinear_pointwise"] = {
      {{T({8, 32}), V::Real(0.1), I(0), T({16, 32})},
       {T({8, 16})},
       Mm(8, 32, 16)}};
  // Conv2d 3->16, 3x3, on 2x3x32x32 with padding 1: 2x16x32x32.
  cases["mkldnn::_convolution_pointwise"] = {
      {{T({2, 3, 32, 32}), T({16, 3, 3, 3}), T({16}), L({1, 1}), L({1, 1}),
        L({1, 1}), I(1)},
       {T({2, 16, 32, 32})},
       Conv2d(2, 3, 16, 32, 32, 3, 3)},
      // The binary overload: X, other, W, B, ...
      {{T({2, 3, 32, 32}), T({2, 16, 32, 32}), T({16, 3, 3, 3}), None()},
       {T({2, 16, 32, 32})},
       Conv2d(2, 3, 16, 32, 32, 3, 3)},
      // Grouped: 8 input channels in 2 groups.
      {{T({1, 8, 10, 10}), T({4, 4, 3, 3}), None()},
       {T({1, 4, 8, 8})},
       Conv2d(1, 4, 4, 8, 8, 3, 3)}};
  cases["mkldnn::_convolution_pointwise_"] = {
      {{T({2, 16, 32, 32}), T({2, 3, 32, 32}), T({16, 3, 3, 3}), None()},
       {T({2, 16, 32, 32})},
       Conv2d(2, 3, 16, 32, 32, 3, 3)}};
  // A transposed convolution counts per input point: 1x8x5x5 in, 8->4
  // channels, 3x3 kernel: each input point meets 3*3 taps of 8*4 pairs.
  cases["mkldnn::_convolution_transpose_pointwise"] = {
      {{T({1, 8, 5, 5}), T({8, 4, 3, 3}), None()},
       {T({1, 4, 7, 7})},
       2 * 1 * 5 * 5 * 3 * 3 * 8 * 4}};
  // Quantized linear layers: the weight is a packed-parameters object (a
  // value no formula reads), X [4,6,32] -> Y [4,6,16].
  for (const char* packet :
       {"_quantized::_wrapped_quantized_linear_prepacked",
        "_quantized::linear",
        "_quantized::linear_dynamic",
        "_quantized::wrapped_fbgemm_linear_fp16_weight",
        "_quantized::wrapped_quantized_linear",
        "aten::_wrapped_quantized_linear_prepacked",
        "aten::fbgemm_linear_fp16_weight",
        "aten::fbgemm_linear_fp16_weight_fp32_activation",
        "aten::fbgemm_linear_int8_weight",
        "aten::fbgemm_linear_int8_weight_fp32_activation",
        "quantized::linear",
        "quantized::linear_dynamic",
        "quantized::linear_dynamic_fp16",
        "quantized::linear_dynamic_fp16_unpacked_weight",
        "quantized::linear_leaky_relu",
        "quantized::linear_relu",
        "quantized::linear_relu_dynamic",
        "quantized::linear_relu_dynamic_fp16",
        "quantized::linear_tanh",
        "quantized::linear_with_input_q_dq_qweight_dq_output_fp32",
        "quantized::linear_with_input_q_dq_qweight_dq_relu_output_fp32"}) {
    cases[packet] = {{{T({4, 6, 32}), V{}, V::Real(0.1), I(0)},
                      {T({4, 6, 16})},
                      Mm(24, 32, 16)}};
  }
  // 1-D: [2,3,32] with a 3-tap kernel -> [2,16,30]; oneDNN prepacks the
  // weight as a 2-D one, [16,3,1,3]. 3-D: [1,2,6,6,6] with [4,2,3,3,3] ->
  // [1,4,4,4,4].
  const Count qconv1d = 2 * 2 * 16 * 30 * 3 * 3;
  cases["onednn::qconv1d_pointwise"] = {
      {{T({2, 3, 32}), V::Real(0.1), I(0), T({16, 3, 1, 3})},
       {T({2, 16, 30})},
       qconv1d}};
  cases["onednn::qconv3d_pointwise"] = {
      {{T({1, 2, 6, 6, 6}), V::Real(0.1), I(0), T({4, 2, 3, 3, 3})},
       {T({1, 4, 4, 4, 4})},
       2 * 1 * 4 * 4 * 4 * 4 * 2 * 3 * 3 * 3}};
  for (const char* packet :
       {"onednn::qconv2d_pointwise", "onednn::qconv_pointwise"}) {
    cases[packet] = {{{T({2, 3, 32, 32}), V::Real(0.1), I(0), T({16, 3, 3, 3})},
                      {T({2, 16, 32, 32})},
                      Conv2d(2, 3, 16, 32, 32, 3, 3)}};
  }
  cases["onednn::qconv_pointwise"].push_back(
      {{T({2, 3, 32}), V::Real(0.1), I(0), T({16, 3, 1, 3})},
       {T({2, 16, 30})},
       qconv1d});
  cases["aten::_native_multi_head_attention"] = {
      {{T({2, 5, 16}), T({2, 7, 16}), T({2, 7, 16}), I(16), I(4), T({48, 16}),
        T({48}), T({16, 16}), T({16})},
       {},
       mha}};
  // Encoder layer: self-attention (L = S = 5) + FFN 16 -> 32 -> 16.
  std::vector<V> encoder = {
      T({2, 5, 16}), I(16),       I(4),     T({48, 16}), T({48}),
      T({16, 16}),   T({16}),     B(false), B(false),    V::Real(1e-5),
      T({16}),       T({16}),     T({16}),  T({16}),     T({32, 16}),
      T({32}),       T({16, 32}), T({16})};
  cases["aten::_transformer_encoder_layer_fwd"] = {
      {encoder,
       {},
       3 * Mm(2 * 5, 16, 16) + Attention(2 * 4, 5, 5, 4, 4) +
           Mm(2 * 5, 16, 16) + Mm(2 * 5, 16, 32) + Mm(2 * 5, 32, 16)}};
  return cases;
}

TEST(OperatorFormulasTest, EveryFormulaMatchesItsHandComputation) {
  for (const auto& [packet, cases] : Cases()) {
    for (std::size_t i = 0; i < cases.size(); ++i) {
      absl::StatusOr<Count> flops = Evaluate(packet, cases[i]);
      ASSERT_TRUE(flops.ok())
          << packet << " case " << i << ": " << flops.status();
      EXPECT_EQ(*flops, cases[i].expected) << packet << " case " << i;
    }
  }
}

// Convolutions whose weights are packed-parameters objects: the kernel size
// and groups are not among the call's values, so every call is an error that
// names why (NOTE [Packed low-precision weights]), never a count.
const std::set<std::string>& UncountableCalls() {
  static const auto* packets =
      new std::set<std::string>{"_quantized::conv2d",
                                "_quantized::conv2d_relu",
                                "_quantized::conv3d",
                                "_quantized::conv3d_relu",
                                "_quantized::conv_transpose1d",
                                "_quantized::conv_transpose2d",
                                "quantized::conv1d",
                                "quantized::conv1d_dynamic",
                                "quantized::conv1d_relu",
                                "quantized::conv2d",
                                "quantized::conv2d_add",
                                "quantized::conv2d_add_relu",
                                "quantized::conv2d_dynamic",
                                "quantized::conv2d_relu",
                                "quantized::conv3d",
                                "quantized::conv3d_dynamic",
                                "quantized::conv3d_relu",
                                "quantized::conv_transpose1d",
                                "quantized::conv_transpose1d_dynamic",
                                "quantized::conv_transpose2d",
                                "quantized::conv_transpose2d_dynamic",
                                "quantized::conv_transpose3d",
                                "quantized::conv_transpose3d_dynamic"};
  return *packets;
}

TEST(OperatorFormulasTest, PackedConvolutionWeightsAreNamedNotGuessed) {
  // quantized::conv2d.new(qx, packed_weight, output_scale, output_zero_point)
  // on [1,3,32,32] -> [1,8,30,30]: a 3x3 kernel at stride 1, or a 4x4 one
  // with padding 1, or ...
  const Case call = {
      {T({1, 3, 32, 32}), V{}, V::Real(0.1), I(0)}, {T({1, 8, 30, 30})}, 0};
  for (const std::string& packet : UncountableCalls()) {
    absl::StatusOr<Count> flops = Evaluate(packet, call);
    ASSERT_FALSE(flops.ok()) << packet;
    EXPECT_EQ(flops.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_EQ(flops.status().message(),
              "quantized convolution: the kernel size, stride, padding and "
              "groups are inside the packed weight (torch.classes.quantized "
              "ConvPackedParamsBase), which operator formulas cannot read; the "
              "call is not counted");
  }
}

TEST(OperatorFormulasTest, EveryTableEntryHasAHandComputedCase) {
  const auto cases = Cases();
  std::set<std::string> untested;
  for (const OperatorFormulaEntry& entry : AllOperatorFormulas()) {
    if (!cases.contains(std::string(entry.packet)) &&
        !UncountableCalls().contains(std::string(entry.packet))) {
      untested.insert(std::string(entry.packet));
    }
  }
  EXPECT_TRUE(untested.empty())
      << "no hand-computed case for " << *untested.begin();
  for (const auto& [packet, unused] : cases) {
    EXPECT_NE(FindOperatorFormula(packet), nullptr)
        << packet << " is not in the table";
  }
  for (const std::string& packet : UncountableCalls()) {
    EXPECT_NE(FindOperatorFormula(packet), nullptr)
        << packet << " is not in the table";
  }
}

TEST(OperatorFormulasTest, LargeMetaShapesDoNotOverflow) {
  // A [2^31, 2^31] @ [2^31, 2^31] product: 2^94 FLOPs, beyond 64 bits.
  const std::int64_t side = std::int64_t{1} << 31;
  EXPECT_EQ(*Evaluate("aten::mm", {{T({side, side}), T({side, side})}, {}, 0}),
            Count(1) << 94);
}

TEST(OperatorFormulasTest, ProductsBeyond128BitsAreErrorsNotWrappedNumbers) {
  const std::int64_t huge = std::int64_t{1} << 62;
  absl::StatusOr<Count> flops = Evaluate(
      "aten::bmm", {{T({huge, huge, huge}), T({huge, huge, huge})}, {}, 0});
  ASSERT_FALSE(flops.ok());
  EXPECT_EQ(flops.status().code(), absl::StatusCode::kOutOfRange);
}

TEST(OperatorFormulasTest, BadShapesAreErrorsThatNameTheProblem) {
  auto message = [](absl::string_view packet, std::vector<V> arguments,
                    std::vector<V> results = {}) {
    absl::StatusOr<Count> flops = Evaluate(packet, {arguments, results, 0});
    EXPECT_FALSE(flops.ok());
    return std::string(flops.status().message());
  };
  EXPECT_EQ(message("aten::mm", {T({2, 3}), T({4, 5})}),
            "matmul: inner dimensions must match, got 3 and 4");
  EXPECT_EQ(message("aten::bmm", {T({2, 3}), T({2, 3, 5})}),
            "bmm: the first operand must be 3-D, got shape [2, 3]");
  EXPECT_EQ(message("aten::mm", {T({3, 4})}), "mat2 (argument 1) is missing");
  EXPECT_EQ(
      message("aten::_scaled_dot_product_flash_attention",
              {T({2, 3, 8, 16}), T({2, 2, 8, 16}), T({2, 2, 8, 16})}),
      "attention: query heads (3) must be a multiple of key/value heads (2)");
  EXPECT_EQ(message("aten::convolution_backward", {T({1}), T({1}), T({1})}),
            "transposed (argument 7) is missing");
  EXPECT_EQ(message("aten::_grouped_mm",
                    {T({64, 32}), T({4, 32, 16}), Offsets({16, 8, 48, 64})}),
            "_grouped_mm: offs must rise from 0 to at most the row extent 64, "
            "got 8 after 16");
  EXPECT_EQ(message("aten::_grouped_mm", {T({64, 32}), T({4, 32, 16}), None()}),
            "_grouped_mm: expected [G,m,k] @ [G,k,n], or 2-D and 3-D operands "
            "with offs, got [64, 32] @ [4, 32, 16] without offs");
  EXPECT_EQ(message("aten::_scaled_grouped_mm",
                    {T({64, 32}), T({4, 32, 16}), T({64}), T({4, 16}), T({4})}),
            "_scaled_grouped_mm: the values of offs cannot be read here (meta "
            "or fake tensors, a compiled graph, a CUDA graph capture), so the "
            "groups' sizes are unknown");
  EXPECT_EQ(message("aten::_weight_int8pack_mm",
                    {T({8, 64}), T({16, 64}), T({16})}, {T({4, 16})}),
            "weight-packed matmul: self [8, 64] and result [4, 16] must have "
            "the same rows");
  EXPECT_EQ(message("aten::_weight_int4pack_mm_for_cpu",
                    {T({2, 8, 64}), T({16, 32}), I(32), T({2, 16, 2})},
                    {T({2, 8, 16})}),
            "weight-packed matmul: self must be 2-D, got shape [2, 8, 64]");
  absl::StatusOr<Count> unreadable = Evaluate(
      "aten::_grouped_mm", {{T({64, 32}), T({4, 32, 16}), T({4})}, {}, 0});
  EXPECT_EQ(unreadable.status().code(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<Count> symbolic =
      Evaluate("aten::mm", {{V::UnknownShapeTensor(), T({3, 4})}, {}, 0});
  EXPECT_EQ(symbolic.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(OperatorFormulasTest, TablesAreDisjointAndLookupsExact) {
  EXPECT_EQ(FindOperatorFormula("aten::mm_"), nullptr);
  EXPECT_EQ(FindOperatorFormula("aten::addmm_"), nullptr);
  EXPECT_EQ(FindOperatorFormula("aten::sin"), nullptr);
  ASSERT_NE(FindIgnoredOperator("aten::view"), nullptr);
  EXPECT_EQ(FindIgnoredOperator("aten::view")->reason,
            "Metadata-only tensor view.");
  EXPECT_EQ(FindIgnoredOperator("aten::relu"), nullptr);
  for (const OperatorFormulaEntry& entry : AllOperatorFormulas()) {
    EXPECT_EQ(FindIgnoredOperator(entry.packet), nullptr)
        << entry.packet << " is both counted and ignored";
  }
}

}  // namespace
}  // namespace torchscan::formulas
