// Mask-aware attention: the arithmetic of the second count beside the
// executed one (docs/methodology.md, "Executed and mask-aware attention
// FLOPs").
//
// An attention kernel's executed count (FlopCounterMode's formula) charges
// every (query, key) pair of every batch and head the same: each of its
// products is a multiple of batch * query_heads * query_length * key_length.
// The mask-aware count charges only the pairs the mask allows, at the same
// cost per pair. Deciding which pairs are allowed reads the mask's values;
// that is torch's (torchscan_dispatch/attention_masks.h). These functions are
// the rest: the causal pair count and the scaling.

#ifndef TORCHSCAN_FORMULAS_ATTENTION_MASK_PAIRS_H_
#define TORCHSCAN_FORMULAS_ATTENTION_MASK_PAIRS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "report/count.h"

namespace torchscan::formulas {

using report::Count;

// The (query, key) pairs of one batch and head that `is_causal` allows with
// PyTorch's top-left alignment: query i sees keys j <= i (torch.tril of a
// query_length x key_length matrix of ones). For query_length <= key_length
// that is L (L + 1) / 2; beyond key_length every further query sees all keys.
absl::StatusOr<Count> CausalAllowedPairs(std::int64_t query_length,
                                         std::int64_t key_length);

// The mask-aware count of a call whose executed count is `executed` over
// `all_pairs` (batch * query heads * query length * key length) pairs, of
// which `allowed_pairs` are allowed: executed / all_pairs * allowed_pairs.
// InvalidArgument when allowed_pairs exceeds all_pairs, or when `executed`
// is not a whole cost per pair (then the formula is not a pair count).
absl::StatusOr<Count> MaskAwareFlops(Count executed, Count all_pairs,
                                     Count allowed_pairs);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_ATTENTION_MASK_PAIRS_H_
