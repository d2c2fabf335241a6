#include "formulas/attention_mask_pairs.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace torchscan::formulas {
namespace {

// Enumerates the pairs torch.tril(ones(L, S)) keeps.
Count EnumeratedCausalPairs(std::int64_t query_length,
                            std::int64_t key_length) {
  Count pairs = 0;
  for (std::int64_t i = 0; i < query_length; ++i) {
    for (std::int64_t j = 0; j < key_length; ++j) pairs += j <= i ? 1 : 0;
  }
  return pairs;
}

TEST(CausalAllowedPairsTest, MatchesEnumerationForEveryShape) {
  for (std::int64_t l = 0; l <= 9; ++l) {
    for (std::int64_t s = 0; s <= 9; ++s) {
      EXPECT_EQ(*CausalAllowedPairs(l, s), EnumeratedCausalPairs(l, s))
          << "L=" << l << " S=" << s;
    }
  }
}

TEST(CausalAllowedPairsTest, RejectsNegativeLengths) {
  EXPECT_FALSE(CausalAllowedPairs(-1, 4).ok());
}

// The issue's example: B=2, H=8, L=S=64, E=32, causal. Executed:
// 2 products of 2*B*H*L*S*E; allowed pairs per head 64*65/2 = 2080.
TEST(MaskAwareFlopsTest, IssueExample) {
  const Count executed = Count(2) * 2 * 2 * 8 * 64 * 64 * 32;
  ASSERT_EQ(executed, 8388608);
  const Count all_pairs = Count(2) * 8 * 64 * 64;
  const Count allowed = Count(2) * 8 * 2080;
  EXPECT_EQ(*MaskAwareFlops(executed, all_pairs, allowed), 4259840);
}

TEST(MaskAwareFlopsTest, RejectsInconsistentInputs) {
  EXPECT_FALSE(MaskAwareFlops(100, 10, 11).ok());
  EXPECT_FALSE(MaskAwareFlops(101, 10, 5).ok());
  EXPECT_EQ(*MaskAwareFlops(0, 0, 0), 0);
}

}  // namespace
}  // namespace torchscan::formulas
