// Which arguments of an attention operator say what its mask allows: the
// per-operator half of mask-aware attention (attention_masks.h), found once
// from the operator's schema and kept in its OperatorInfo.

#ifndef TORCHSCAN_DISPATCH_ATTENTION_MASK_RULE_H_
#define TORCHSCAN_DISPATCH_ATTENTION_MASK_RULE_H_

#include <ATen/core/function_schema.h>

#include <optional>
#include <string>

namespace torchscan::dispatch {

struct AttentionMaskRule {
  enum class Kind {
    // A fused SDPA kernel in BHSD layout: its allowed pairs are counted
    // (is_causal, top-left; a boolean or additive mask).
    kPairs,
    // SDPA's math composite: its products reach us as plain matrix
    // products, which no mask-aware count can tell apart.
    kDecomposed,
    // An attention kernel whose masking we do not read (raw flash and
    // efficient kernels, native multi-head attention, flex attention).
    kNotRead,
  };
  Kind kind = Kind::kPairs;
  // Schema indices; -1 when the schema has no such argument.
  int query = -1;
  int key = -1;
  int value = -1;
  int is_causal = -1;    // bool
  int mask = -1;         // Tensor?: attn_mask, attn_bias, bias, mask
  int mask_type = -1;    // int?: custom_mask_type, mask_type
  int window_left = -1;  // int?: a raw flash kernel's sliding window
  int window_right = -1;
  // Whether every call masks (flex attention: its mask is a function).
  bool always_masked = false;
};

// The rule of `packet` ("aten::_scaled_dot_product_flash_attention_for_cpu",
// "higher_order::flex_attention"), with indices from `schema` (nullptr for
// operators without one); nullopt for every operator that is not attention.
std::optional<AttentionMaskRule> FindAttentionMaskRule(
    const std::string& packet, const c10::FunctionSchema* schema);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_ATTENTION_MASK_RULE_H_
