#include "report/render/roofline_listing.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "report/job_merge.h"
#include "report/metric_result.h"
#include "report/roofline.h"

namespace torchscan::report::render {
namespace {

// bf16 at 1e12 FLOP/s and 1e10 bytes/s: the ridge point is at 100.
RooflineDevice Toy() {
  return RooflineDevice{"toy", {{"bf16", 1e12}}, 1e10, "s"};
}

// aten.mm: 4e6 bf16 FLOPs over 1,000 bytes, compute-bound at 4e-6 s;
// aten.add: 1,000 bf16 FLOPs over 10,000 bytes, memory-bound at 1e-6 s;
// aten.addmm: 50 fp32 FLOPs, which toy has no peak for.
FlopReport Report() {
  FlopReport report;
  report.total = MetricResult::Complete(Count(4001050), OperatorFlopsKind());
  report.by_operator = {
      {"aten.add", 1000}, {"aten.addmm", 50}, {"aten.mm", 4000000}};
  report.by_precision = {{"bf16", 4001000}, {"fp32", 50}};
  report.by_operator_precision = {{"aten.add", {{"bf16", 1000}}},
                                  {"aten.addmm", {{"fp32", 50}}},
                                  {"aten.mm", {{"bf16", 4000000}}}};
  BytesMoved bytes;
  bytes.total = MetricResult::Complete(Count(11000), BytesMovedKind());
  bytes.read = 11000;
  bytes.by_operator = {{"aten.add", {10000, 0}}, {"aten.mm", {1000, 0}}};
  report.bytes = bytes;
  return report;
}

TEST(RooflineListingTest, ListsTheTotalThenTheOperatorsSlowestFirst) {
  EXPECT_EQ(
      "roofline on toy (s)\n"
      "total: lower bound unknown (toy has no peak for fp32 (50 FLOPs)), "
      "memory 1.1e-06 s, intensity 363.7 FLOPs/byte, unavailable\n"
      "operators by lower bound (2 of 3):\n"
      "  aten.mm: lower bound 4e-06 s, compute-bound (compute 4e-06 s, "
      "memory 1e-07 s), intensity 4000 FLOPs/byte, ridge point 100 "
      "FLOPs/byte, complete\n"
      "  aten.add: lower bound 1e-06 s, memory-bound (compute 1e-09 s, "
      "memory 1e-06 s), intensity 0.1 FLOPs/byte, ridge point 100 "
      "FLOPs/byte, complete\n",
      RooflineListing(ComputeRoofline(Report(), Toy()), 2));
}

TEST(RooflineListingTest, UnavailableOperatorsComeLastWithTheirReason) {
  const std::string listing = RooflineListing(ComputeRoofline(Report(), Toy()));
  EXPECT_THAT(listing,
              testing::EndsWith(
                  "  aten.addmm: lower bound unknown (toy has no peak for fp32 "
                  "(50 FLOPs)), memory 0 s, intensity n/a (no bytes), "
                  "unavailable\n"));
}

// Rank 0: 1,000 FLOPs and 100 bytes (1e-8 s of memory traffic); rank 1:
// 1e6 FLOPs (1e-6 s of arithmetic) and 100 bytes, its bytes partial.
JobReport Job() {
  JobReport job;
  job.ranks = {0, 1};
  job.per_rank = {
      {0, MetricResult::Complete(Count(1000), OperatorFlopsKind())},
      {1, MetricResult::Complete(Count(1000000), OperatorFlopsKind())}};
  job.by_precision = {{"bf16", 1001000}};
  JobBytes bytes;
  bytes.per_rank = {{0, MetricResult::Complete(Count(100), BytesMovedKind())},
                    {1, MetricResult::Partial(Count(100), BytesMovedKind())}};
  job.bytes = bytes;
  return job;
}

TEST(RooflineListingTest, AJobsLowerBoundIsItsSlowestRanks) {
  const JobRoofline roofline = ComputeJobRoofline(Job(), Toy());
  EXPECT_DOUBLE_EQ(1e-8, *roofline.per_rank.at(0).seconds);
  EXPECT_DOUBLE_EQ(1e-6, *roofline.per_rank.at(1).seconds);
  EXPECT_EQ("bf16", *roofline.per_rank.at(1).peak_precision);
  EXPECT_THAT(roofline.per_rank.at(1).partial,
              testing::ElementsAre("bytes: rank 1's are partial"));
  EXPECT_DOUBLE_EQ(1e-6, *roofline.seconds);
  EXPECT_EQ(1, *roofline.slowest_rank);
  EXPECT_EQ(
      "roofline on toy: rank 0 1e-08 s, rank 1 1e-06 s; largest 1e-06 s "
      "(rank 1)\n",
      JobRooflineLine(roofline));
}

TEST(RooflineListingTest, AJobWithAnUnavailableRankHasNoLowerBound) {
  JobReport job = Job();
  job.by_precision = {{"fp32", 1001000}};
  const JobRoofline roofline = ComputeJobRoofline(job, Toy());
  EXPECT_EQ(std::nullopt, roofline.seconds);
  EXPECT_EQ(
      "roofline on toy: rank 0 unavailable, rank 1 unavailable; largest "
      "unknown\n",
      JobRooflineLine(roofline));
}

TEST(RooflineListingTest, AnUnknownDeviceOrACrawlIsOneLine) {
  EXPECT_THAT(
      std::string(RooflineOfDocument(FlopReportToJson(Report()), "toy")
                      .status()
                      .message()),
      testing::StartsWith("unknown device model 'toy': the device table"));
  EXPECT_EQ(
      "roofline: a crawl report has no bytes moved; measure the workload "
      "with measure_flops for a roofline",
      RooflineOfDocument(Json{{"layers", Json::array()}}, "L4")
          .status()
          .message());
}

TEST(RooflineListingTest, TheCommandWritesTheListingAndTheJson) {
  absl::StatusOr<RooflineOutput> output =
      RooflineOfDocument(FlopReportToJson(Report()), "H100 SXM");
  ASSERT_TRUE(output.ok()) << output.status();
  EXPECT_THAT(output->listing, testing::StartsWith("roofline on H100 SXM ("));
  const Json json = Json::parse(output->json);
  EXPECT_EQ("H100 SXM", json["device"]["name"]);
  EXPECT_EQ("complete", json["by_operator"]["aten.mm"]["status"]);
}

}  // namespace
}  // namespace torchscan::report::render
