#include "formulas/attention_mask_pairs.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace torchscan::formulas {

absl::StatusOr<Count> CausalAllowedPairs(std::int64_t query_length,
                                         std::int64_t key_length) {
  if (query_length < 0 || key_length < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("attention: negative sequence length (query ",
                     query_length, ", key ", key_length, ")"));
  }
  // Queries 0 .. m-1 (m = min(L, S)) see 1 .. m keys; the L - m queries
  // after them see all S keys.
  const Count m = std::min(query_length, key_length);
  return m * (m + 1) / 2 + Count(query_length - m) * key_length;
}

absl::StatusOr<Count> MaskAwareFlops(Count executed, Count all_pairs,
                                     Count allowed_pairs) {
  if (allowed_pairs < 0 || allowed_pairs > all_pairs) {
    return absl::InvalidArgumentError(
        absl::StrCat("attention: ", report::CountToString(allowed_pairs),
                     " allowed pairs of ", report::CountToString(all_pairs)));
  }
  if (all_pairs == 0) return Count(0);
  if (executed % all_pairs != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attention: the executed count ", report::CountToString(executed),
        " is not a whole cost per (query, key) pair of ",
        report::CountToString(all_pairs)));
  }
  return executed / all_pairs * allowed_pairs;
}

}  // namespace torchscan::formulas
