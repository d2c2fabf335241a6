// Mask-aware attention in eager code: beside a counted attention call's
// executed FLOPs (FlopCounterMode's formula, which charges every (query,
// key) pair), the session records how many of them its mask does not allow
// (CountingSession::RecordMaskExclusion). The report's `mask_aware` count is
// the total less those exclusions (docs/methodology.md).
//
// Which pairs are allowed:
//  - is_causal: query i sees keys j <= i (PyTorch's top-left alignment, also
//    when the query and key lengths differ);
//  - a boolean mask: True entries; an additive (floating) mask: entries that
//    are not -inf; broadcast over batch and heads as the kernel broadcasts it;
//  - both: entries allowed by both.
// Counting a mask's allowed entries reads its values. That is never done on
// a meta tensor, a fake tensor or another tensor subclass, or on a device
// whose current stream is being captured into a graph: such a call's mask is
// "not read", its whole executed count is left out of the mask-aware count
// (which stays a lower bound) and the report names it. Compiled code is
// handled by its tally (compiled_graph_tally.h), which never reads values.
//
// Calls without a mask and without is_causal pay one test of two arguments.

#ifndef TORCHSCAN_DISPATCH_ATTENTION_MASKS_H_
#define TORCHSCAN_DISPATCH_ATTENTION_MASKS_H_

#include <ATen/core/ivalue.h>
#include <c10/util/ArrayRef.h>

#include "absl/status/statusor.h"
#include "torchscan_dispatch/attention_mask_rule.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/operator_info.h"

namespace torchscan::dispatch {

// Whether a call with `arguments` (schema order) masks anything: is_causal
// set, a mask given, a mask type or sliding window chosen.
bool AttentionCallIsMasked(const AttentionMaskRule& rule,
                           c10::ArrayRef<c10::IValue> arguments);

// Records the mask exclusion of a finished, masked call of `info` (which has
// an attention_mask rule), after the call itself was recorded, from its
// arguments (schema order) and results. A call whose formula fails records
// nothing more (the failure is named already).
void RecordAttentionMask(const OperatorInfo& info,
                         c10::ArrayRef<c10::IValue> arguments,
                         c10::ArrayRef<c10::IValue> results,
                         CountingSession& session);

// The same for SDPA's math composite (AttentionMaskRule::Kind::kDecomposed),
// called before its decomposition runs: its products will be counted as
// plain matrix products, so its forward products (and, when gradients are
// required, their backward) are recorded as not read.
void RecordDecomposedAttention(const OperatorInfo& info,
                               c10::ArrayRef<c10::IValue> arguments,
                               CountingSession& session);

// Flex attention's dense kernel run eagerly (the higher-order operator's
// CompositeExplicitAutograd kernel, "higher_order::flex_attention" or
// "higher_order::flex_attention_backward"): its products reach us as plain
// matrix products, counted as executed, so the Python side that sees the
// call (_flex_attention.py) evaluates the block mask's mask_mod and gives
// the call's `executed` product FLOPs over `all_pairs` (batch x query heads
// x query length x key length) pairs, with `allowed_pairs` allowed, or the
// reason the mask was not read. Records the pairs the mask excludes, or the
// whole products as not read, for `info` in the session's current module
// scope.
void RecordFlexAttentionMask(const OperatorInfo& info, Count executed,
                             Count all_pairs,
                             const absl::StatusOr<Count>& allowed_pairs,
                             CountingSession& session);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_ATTENTION_MASKS_H_
