// RecordFlexAttentionMask: an eager flex attention call's executed products
// (plain bmm calls, counted by the fallback) and what its mask excludes.
// Expected values are computed here by hand.

#include "torchscan_dispatch/attention_masks.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/ones.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "report/flop_report.h"
#include "report/metric_result.h"
#include "torchscan_dispatch/active_counting.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/operator_info.h"

namespace torchscan::dispatch {
namespace {

using report::Count;

const OperatorInfo& FlexAttention() {
  return SyntheticOperatorInfo("higher_order::flex_attention", nullptr, "");
}

// B=1, H=2, L=S=4, E=Ev=3: scores [2,4,3] @ [2,3,4] and out [2,4,4] @
// [2,4,3], each 2*2*4*4*3 = 192 FLOPs, over 1*2*4*4 = 32 pairs.
constexpr Count kExecuted = 384;
constexpr Count kPairs = 32;

report::FlopReport ReportOfOneCall(const absl::StatusOr<Count>& allowed) {
  ActiveCounting counting;
  CountingSession& session = counting.session();
  at::bmm(at::ones({2, 4, 3}), at::ones({2, 3, 4}));
  at::bmm(at::ones({2, 4, 4}), at::ones({2, 4, 3}));
  RecordFlexAttentionMask(FlexAttention(), kExecuted, kPairs, allowed, session);
  counting.Stop();
  absl::StatusOr<report::FlopReport> report = session.BuildReport();
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? *std::move(report) : report::FlopReport{};
}

TEST(FlexAttentionMaskTest, ExcludesThePairsTheMaskDoesNotAllow) {
  // Causal: 4*5/2 = 10 of 16 pairs per head, 20 of 32.
  const report::FlopReport report = ReportOfOneCall(Count(20));
  EXPECT_EQ(report.total, report::MetricResult::Complete(
                              kExecuted, report::OperatorFlopsKind()));
  // The exclusion names no operator of its own.
  EXPECT_EQ(1u, report.by_operator.size());
  EXPECT_EQ(report.by_operator.at("aten.bmm"), kExecuted);
  ASSERT_TRUE(report.mask_aware.has_value());
  EXPECT_EQ(report.mask_aware->total,
            report::MetricResult::Complete(Count(384 / 32 * 20),
                                           report::MaskAwareFlopsKind()));
  EXPECT_TRUE(report.mask_aware->diagnostics.empty());
}

TEST(FlexAttentionMaskTest, AMaskNotReadLeavesTheProductsOutAndIsNamed) {
  const report::FlopReport report = ReportOfOneCall(
      absl::FailedPreconditionError("the query is a meta tensor"));
  ASSERT_TRUE(report.mask_aware.has_value());
  EXPECT_EQ(
      report.mask_aware->total,
      report::MetricResult::Partial(Count(0), report::MaskAwareFlopsKind()));
  ASSERT_EQ(report.mask_aware->diagnostics.size(), 1);
  const report::Diagnostic& diagnostic = report.mask_aware->diagnostics[0];
  EXPECT_EQ(diagnostic.code, "attention_mask_not_read");
  EXPECT_EQ(diagnostic.subject, "higher_order.flex_attention");
  EXPECT_NE(diagnostic.message.find("flex attention's mask_mod was not "
                                    "evaluated: the query is a meta tensor"),
            std::string::npos)
      << diagnostic.message;
}

TEST(FlexAttentionMaskTest, MoreAllowedPairsThanPairsIsNotRead) {
  const report::FlopReport report = ReportOfOneCall(Count(33));
  ASSERT_TRUE(report.mask_aware.has_value());
  EXPECT_EQ(
      report.mask_aware->total,
      report::MetricResult::Partial(Count(0), report::MaskAwareFlopsKind()));
  ASSERT_EQ(report.mask_aware->diagnostics.size(), 1);
  EXPECT_NE(
      report.mask_aware->diagnostics[0].message.find("33 allowed pairs of 32"),
      std::string::npos)
      << report.mask_aware->diagnostics[0].message;
}

}  // namespace
}  // namespace torchscan::dispatch
