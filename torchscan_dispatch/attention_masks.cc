// Per-operator headers only (NOTE [Per-operator headers] in
// tools/torch_defs.bzl), defined here because the other sources of this
// library target still include the all-operator headers.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#ifndef AT_PER_OPERATOR_HEADERS
#define AT_PER_OPERATOR_HEADERS
#endif

#include "torchscan_dispatch/attention_masks.h"

#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/ones.h>
#include <c10/core/ScalarType.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <array>
#include <cstdint>
#include <exception>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "formulas/attention_mask_pairs.h"
#include "torchscan_dispatch/call_recording.h"
#include "torchscan_dispatch/operator_values.h"

namespace torchscan::dispatch {
namespace {

using Kind = AttentionMaskRule::Kind;

struct KnownAttention {
  std::string_view packet;
  Kind kind;
  bool always_masked = false;
};

// Every attention operator with a FLOP formula, or whose decomposition
// carries attention FLOPs.
constexpr std::array<KnownAttention, 19> kKnownAttention{{
    {"aten::_scaled_dot_product_flash_attention", Kind::kPairs},
    {"aten::_scaled_dot_product_flash_attention_backward", Kind::kPairs},
    {"aten::_scaled_dot_product_flash_attention_for_cpu", Kind::kPairs},
    {"aten::_scaled_dot_product_flash_attention_for_cpu_backward",
     Kind::kPairs},
    {"aten::_scaled_dot_product_efficient_attention", Kind::kPairs},
    {"aten::_scaled_dot_product_efficient_attention_backward", Kind::kPairs},
    {"aten::_scaled_dot_product_cudnn_attention", Kind::kPairs},
    {"aten::_scaled_dot_product_cudnn_attention_backward", Kind::kPairs},
    {"aten::_scaled_dot_product_fused_attention_overrideable", Kind::kPairs},
    {"aten::_scaled_dot_product_fused_attention_overrideable_backward",
     Kind::kPairs},
    {"aten::_scaled_dot_product_attention_math", Kind::kDecomposed},
    {"aten::_flash_attention_forward", Kind::kNotRead},
    {"aten::_flash_attention_backward", Kind::kNotRead},
    {"aten::_efficient_attention_forward", Kind::kNotRead},
    {"aten::_efficient_attention_backward", Kind::kNotRead},
    {"aten::_native_multi_head_attention", Kind::kNotRead},
    {"aten::_transformer_encoder_layer_fwd", Kind::kNotRead},
    {"higher_order::flex_attention", Kind::kNotRead, true},
    {"higher_order::flex_attention_backward", Kind::kNotRead, true},
}};

int IndexOf(const c10::FunctionSchema& schema,
            std::initializer_list<std::string_view> names) {
  const auto& arguments = schema.arguments();
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    for (std::string_view name : names) {
      if (arguments[i].name() == name) return static_cast<int>(i);
    }
  }
  return -1;
}

const c10::IValue* ArgumentAt(c10::ArrayRef<c10::IValue> arguments, int index) {
  if (index < 0 || index >= static_cast<int>(arguments.size())) return nullptr;
  return &arguments[index];
}

const at::Tensor* TensorAt(c10::ArrayRef<c10::IValue> arguments, int index) {
  const c10::IValue* value = ArgumentAt(arguments, index);
  if (value == nullptr || !value->isTensor() || !value->toTensor().defined()) {
    return nullptr;
  }
  return &value->toTensor();
}

bool IsCausal(const AttentionMaskRule& rule,
              c10::ArrayRef<c10::IValue> arguments) {
  const c10::IValue* value = ArgumentAt(arguments, rule.is_causal);
  return value != nullptr && value->isBool() && value->toBool();
}

std::string NotReadReason(const OperatorInfo& info) {
  if (info.attention_mask->always_masked) {
    return "flex attention's block mask and score_mod are not read";
  }
  if (info.attention_mask->kind == Kind::kDecomposed) {
    return "SDPA's math decomposition runs its products as plain matrix "
           "products; its forward products, and their backward when "
           "gradients are required, are left out";
  }
  return absl::StrCat("the causal flag, bias, mask type or window of ",
                      info.report_name, " is not read");
}

// NOTE [Reading a mask]
// A meta tensor has no values; a fake tensor or another subclass has none we
// may read; and copying a device tensor to the host while its stream is
// being captured (CUDA graphs) would invalidate the user's capture, so the
// stream is asked first, through the device-generic guard.
absl::Status CheckReadable(const at::Tensor& mask) {
  if (mask.is_meta()) {
    return absl::FailedPreconditionError("the mask is a meta tensor");
  }
  if (mask.key_set().has(c10::DispatchKey::Python)) {
    return absl::FailedPreconditionError(
        "the mask is a fake tensor or a tensor subclass");
  }
  if (mask.is_nested() || mask.layout() != at::kStrided) {
    return absl::FailedPreconditionError("the mask is not a strided tensor");
  }
  if (!mask.is_cpu()) {
    const c10::impl::VirtualGuardImpl guard(mask.device().type());
    if (guard.getStream(mask.device()).is_capturing()) {
      return absl::FailedPreconditionError(
          "the mask's stream is being captured into a graph (reading it "
          "would break the capture)");
    }
  }
  return absl::OkStatus();
}

// The allowed (query, key) pairs of a masked call over all batches and
// heads: `target` is {batch, query heads, query length, key length}.
absl::StatusOr<Count> AllowedPairs(const AttentionMaskRule& rule,
                                   c10::ArrayRef<c10::IValue> arguments,
                                   const std::vector<std::int64_t>& target) {
  const auto [b, h, l, s] =
      std::array{target[0], target[1], target[2], target[3]};
  const bool causal = IsCausal(rule, arguments);
  const at::Tensor* mask = TensorAt(arguments, rule.mask);
  if (mask == nullptr) {
    TS_ASSIGN_OR_RETURN(Count per_head, formulas::CausalAllowedPairs(l, s));
    return Count(b) * h * per_head;
  }
  TS_RETURN_IF_ERROR(CheckReadable(*mask));
  NotCounted not_counted;
  try {
    at::Tensor allowed;
    if (mask->scalar_type() == at::kBool) {
      allowed = *mask;
    } else if (at::isFloatingType(mask->scalar_type())) {
      allowed = mask->isneginf().logical_not();
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("a mask of dtype ", c10::toString(mask->scalar_type()),
                       " is neither boolean nor additive"));
    }
    if (causal) {
      allowed = allowed.logical_and(
          at::ones({l, s}, allowed.options().dtype(at::kBool)).tril());
    }
    if (allowed.dim() > 4 ||
        at::infer_size(allowed.sizes(), target) != target) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the mask's shape [", absl::StrJoin(allowed.sizes(), ", "),
          "] does not broadcast to [", absl::StrJoin(target, ", "), "]"));
    }
    if (allowed.numel() == 0) return Count(0);
    // Broadcasting repeats every entry the same number of times.
    const Count repeats = Count(b) * h * l * s / allowed.numel();
    return Count(allowed.sum().item<std::int64_t>()) * repeats;
  } catch (const std::exception& error) {
    return absl::InternalError(
        absl::StrCat("reading the mask failed: ", error.what()));
  }
}

absl::StatusOr<Count> MaskAwareCount(const AttentionMaskRule& rule,
                                     c10::ArrayRef<c10::IValue> arguments,
                                     Count executed) {
  const at::Tensor* query = TensorAt(arguments, rule.query);
  const at::Tensor* key = TensorAt(arguments, rule.key);
  if (query == nullptr || key == nullptr || query->dim() != 4 ||
      key->dim() != 4) {
    return absl::InvalidArgumentError(
        "query and key are not 4-D [batch, heads, length, dim] tensors");
  }
  const std::vector<std::int64_t> target{query->size(0), query->size(1),
                                         query->size(2), key->size(2)};
  TS_ASSIGN_OR_RETURN(Count allowed, AllowedPairs(rule, arguments, target));
  return formulas::MaskAwareFlops(
      executed, Count(target[0]) * target[1] * target[2] * target[3], allowed);
}

absl::StatusOr<Count> Executed(const OperatorInfo& info,
                               c10::ArrayRef<c10::IValue> arguments,
                               c10::ArrayRef<c10::IValue> results) {
  const OperatorValues argument_values = ToOperatorValues(arguments);
  const OperatorValues result_values = ToOperatorValues(results);
  try {
    return info.formula->formula(
        formulas::OperatorCall{argument_values, result_values});
  } catch (const std::exception& error) {
    return absl::InternalError(error.what());
  }
}

}  // namespace

std::optional<AttentionMaskRule> FindAttentionMaskRule(
    const std::string& packet, const c10::FunctionSchema* schema) {
  for (const KnownAttention& known : kKnownAttention) {
    if (known.packet != packet) continue;
    AttentionMaskRule rule;
    rule.kind = known.kind;
    rule.always_masked = known.always_masked;
    if (schema == nullptr) {
      // A compiled graph's higher-order operator: query, key, value first.
      rule.query = 0;
      rule.key = 1;
      rule.value = 2;
      return rule;
    }
    rule.query = IndexOf(*schema, {"query", "q"});
    rule.key = IndexOf(*schema, {"key", "k"});
    rule.value = IndexOf(*schema, {"value", "v"});
    rule.is_causal = IndexOf(*schema, {"is_causal", "causal"});
    rule.mask = IndexOf(*schema,
                        {"attn_mask", "attn_bias", "bias", "mask", "src_mask"});
    rule.mask_type = IndexOf(*schema, {"custom_mask_type", "mask_type"});
    rule.window_left = IndexOf(*schema, {"window_size_left"});
    rule.window_right = IndexOf(*schema, {"window_size_right"});
    if (rule.kind == Kind::kPairs && (rule.query < 0 || rule.key < 0)) {
      rule.kind = Kind::kNotRead;
    }
    return rule;
  }
  return std::nullopt;
}

bool AttentionCallIsMasked(const AttentionMaskRule& rule,
                           c10::ArrayRef<c10::IValue> arguments) {
  if (rule.always_masked || IsCausal(rule, arguments) ||
      TensorAt(arguments, rule.mask) != nullptr) {
    return true;
  }
  const c10::IValue* mask_type = ArgumentAt(arguments, rule.mask_type);
  if (mask_type != nullptr && mask_type->isInt() && mask_type->toInt() != 0 &&
      rule.kind == Kind::kNotRead && rule.mask < 0) {
    return true;  // a raw efficient kernel's built-in causal mask
  }
  for (int window : {rule.window_left, rule.window_right}) {
    const c10::IValue* size = ArgumentAt(arguments, window);
    if (size != nullptr && size->isInt() && size->toInt() >= 0) return true;
  }
  return false;
}

void RecordAttentionMask(const OperatorInfo& info,
                         c10::ArrayRef<c10::IValue> arguments,
                         c10::ArrayRef<c10::IValue> results,
                         CountingSession& session) {
  const AttentionMaskRule& rule = *info.attention_mask;
  if (info.formula == nullptr) return;
  const absl::StatusOr<Count> executed = Executed(info, arguments, results);
  if (!executed.ok()) return;
  if (rule.kind != Kind::kPairs) {
    session.RecordMaskExclusion(info, *executed, NotReadReason(info));
    return;
  }
  const absl::StatusOr<Count> mask_aware =
      MaskAwareCount(rule, arguments, *executed);
  if (!mask_aware.ok()) {
    session.RecordMaskExclusion(info, *executed, mask_aware.status().message());
    return;
  }
  session.RecordMaskExclusion(info, *executed - *mask_aware, "");
}

void RecordDecomposedAttention(const OperatorInfo& info,
                               c10::ArrayRef<c10::IValue> arguments,
                               CountingSession& session) {
  const AttentionMaskRule& rule = *info.attention_mask;
  if (!AttentionCallIsMasked(rule, arguments)) return;
  const at::Tensor* query = TensorAt(arguments, rule.query);
  const at::Tensor* key = TensorAt(arguments, rule.key);
  const at::Tensor* value = TensorAt(arguments, rule.value);
  if (query == nullptr || key == nullptr || value == nullptr ||
      query->dim() < 2 || key->dim() < 2 || value->dim() < 2 ||
      query->numel() == 0) {
    session.RecordMaskExclusion(info, 0, NotReadReason(info));
    return;
  }
  // [..., L, E] @ [..., E, S] and [..., L, S] @ [..., S, Dv] over every
  // batch and query head (the math path repeats grouped key/value heads).
  const std::int64_t l = query->size(-2), e = query->size(-1);
  const std::int64_t s = key->size(-2), dv = value->size(-1);
  const Count batch_heads = Count(query->numel()) / (Count(l) * e);
  Count products = 2 * batch_heads * l * s * (e + dv);
  if (at::GradMode::is_enabled() &&
      (query->requires_grad() || key->requires_grad() ||
       value->requires_grad())) {
    products *= 3;  // each product's backward runs two more of its size
  }
  session.RecordMaskExclusion(info, products, NotReadReason(info));
}

void RecordFlexAttentionMask(const OperatorInfo& info, Count executed,
                             Count all_pairs,
                             const absl::StatusOr<Count>& allowed_pairs,
                             CountingSession& session) {
  if (!allowed_pairs.ok()) {
    session.RecordMaskExclusion(
        info, executed,
        absl::StrCat("flex attention's mask_mod was not evaluated: ",
                     allowed_pairs.status().message()));
    return;
  }
  const absl::StatusOr<Count> mask_aware =
      formulas::MaskAwareFlops(executed, all_pairs, *allowed_pairs);
  if (!mask_aware.ok()) {
    session.RecordMaskExclusion(info, executed, mask_aware.status().message());
    return;
  }
  session.RecordMaskExclusion(info, executed - *mask_aware, "");
}

}  // namespace torchscan::dispatch
