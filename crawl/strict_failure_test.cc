#include "crawl/strict_failure.h"

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "gtest/gtest.h"
#include "report/analysis_report.h"
#include "report/strict.h"
#include "report/test_support.h"

namespace torchscan::crawl {
namespace {

TEST(StrictFailureTest, CarriesTheReportWithTorchScansMessage) {
  const report::AnalysisReport conv = report::testing::Conv2dReportFromParts();
  const absl::Status status = StrictFailure(conv);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), report::IncompleteAnalysisMessage(conv));
  std::optional<report::AnalysisReport> carried = StrictFailureReport(status);
  ASSERT_TRUE(carried.has_value());
  EXPECT_EQ(*carried, conv);
}

TEST(StrictFailureTest, CopiesOfTheStatusCarryItToo) {
  const report::AnalysisReport conv = report::testing::Conv2dReportFromParts();
  absl::Status copy;
  {
    const absl::Status original = StrictFailure(conv);
    copy = original;
  }
  std::optional<report::AnalysisReport> carried = StrictFailureReport(copy);
  ASSERT_TRUE(carried.has_value());
  EXPECT_EQ(*carried, conv);
}

TEST(StrictFailureTest, OtherStatusesCarryNoReport) {
  EXPECT_FALSE(StrictFailureReport(absl::OkStatus()).has_value());
  EXPECT_FALSE(
      StrictFailureReport(absl::FailedPreconditionError("x")).has_value());
}

TEST(StrictFailureTest, ACopiedPayloadCarriesNoReportOnceTheStatusIsGone) {
  constexpr char kUrl[] = "type.torchscan/IncompleteAnalysisReport";
  absl::Status forged = absl::FailedPreconditionError("forged");
  {
    const absl::Status status =
        StrictFailure(report::testing::Conv2dReportFromParts());
    // The payload's bytes, copied into a Cord of their own.
    forged.SetPayload(kUrl, absl::Cord(std::string(*status.GetPayload(kUrl))));
    EXPECT_TRUE(StrictFailureReport(forged).has_value());
  }
  EXPECT_FALSE(StrictFailureReport(forged).has_value());
}

}  // namespace
}  // namespace torchscan::crawl
