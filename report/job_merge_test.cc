#include "report/job_merge.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "report/communication.h"
#include "report/json_io.h"

namespace torchscan::report {
namespace {

TEST(BusBytesTest, FollowsNcclConventions) {
  // all-reduce 2(n-1)/n: 1000 bytes over 4 ranks -> 1500.
  EXPECT_EQ(Count(1500), BusBytes(CollectiveKind::kAllReduce, 4, 1000));
  // all-gather (n-1)/n of the full buffer: 3000 over 3 -> 2000.
  EXPECT_EQ(Count(2000), BusBytes(CollectiveKind::kAllGather, 3, 3000));
  EXPECT_EQ(Count(77), BusBytes(CollectiveKind::kBroadcast, 8, 77));
  EXPECT_EQ(Count(0), BusBytes(CollectiveKind::kBarrier, 8, 0));
}

TEST(BusBytesTest, RoundsHalfUp) {
  // 2 * 2/3 * 5 = 6.67 -> 7; 1/2 * 5 = 2.5 -> 3.
  EXPECT_EQ(Count(7), BusBytes(CollectiveKind::kAllReduce, 3, 5));
  EXPECT_EQ(Count(3), BusBytes(CollectiveKind::kReduceScatter, 2, 5));
}

CommunicationReport SampleCommunication() {
  CommunicationReport report;
  EXPECT_TRUE(
      report.Add("c10d.allreduce_", CollectiveKind::kAllReduce, 2, 400).ok());
  EXPECT_TRUE(
      report.Add("c10d.allreduce_", CollectiveKind::kAllReduce, 2, 100).ok());
  EXPECT_TRUE(
      report.Add("c10d._allgather_base_", CollectiveKind::kAllGather, 4, 64)
          .ok());
  return report;
}

TEST(CommunicationTest, TotalsSumKinds) {
  const CommunicationReport report = SampleCommunication();
  EXPECT_EQ((CommunicationTotals{3, 564, 500 + 48}), report.Totals());
  EXPECT_TRUE(report.complete());
}

TEST(CommunicationTest, UnreadableMakesItPartial) {
  CommunicationReport report = SampleCommunication();
  ASSERT_TRUE(report.AddUnreadable("c10d.x", "no group").ok());
  const Json json = CommunicationToJson(report);
  EXPECT_EQ("partial", json["status"]);
  EXPECT_EQ("unreadable_collective", json["diagnostics"][0]["code"]);
  EXPECT_EQ(4, json["by_operator"].size() + 1);
}

TEST(CommunicationTest, JsonRoundTrips) {
  const CommunicationReport report = SampleCommunication();
  absl::StatusOr<CommunicationReport> read =
      CommunicationFromJson(CommunicationToJson(report));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(report, *read);
}

TEST(CommunicationTest, RejectsInconsistentTotals) {
  Json json = CommunicationToJson(SampleCommunication());
  json["total"]["bus_bytes"] = 1;
  absl::StatusOr<CommunicationReport> read = CommunicationFromJson(json);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(std::string::npos,
            read.status().message().find("communication.total"));
}

Json RankJson(int rank, int world, std::string job, long flops) {
  FlopReport flop_report;
  flop_report.torch_version = "2.13.0";
  flop_report.total = MetricResult::Complete(Count(flops), OperatorFlopsKind());
  flop_report.by_operator["aten.mm"] = flops;
  Json json = FlopReportToJson(flop_report);
  DistributedContext context{job, rank, world, "gloo", {{"0", {0, 1}}}};
  json["distributed"] = DistributedContextToJson(context);
  CommunicationReport comm;
  EXPECT_TRUE(
      comm.Add("c10d.allreduce_", CollectiveKind::kAllReduce, world, 100).ok());
  json["communication"] = CommunicationToJson(comm);
  return json;
}

TEST(JobMergeTest, SumsRanks) {
  absl::StatusOr<JobReport> job = MergeRankReportsJson(
      {RankJson(0, 2, "j", 100), RankJson(1, 2, "j", 300)}, {"a", "b"});
  ASSERT_TRUE(job.ok()) << job.status();
  const Json json = JobReportToJson(*job);
  EXPECT_EQ("complete", json["total"]["status"]);
  EXPECT_EQ(400, json["total"]["value"]);
  EXPECT_EQ(400, json["by_operator"]["aten.mm"]);
  EXPECT_EQ(100, json["rank_min"]);
  EXPECT_EQ(300, json["rank_max"]);
  EXPECT_DOUBLE_EQ(1.5, json["imbalance"].get<double>());
  EXPECT_EQ(2, json["communication"]["by_kind"]["all_reduce"]["calls"]);
  EXPECT_EQ(100, json["communication_per_rank"]["1"]["bus_bytes"]);
}

TEST(JobMergeTest, NamesMissingRanks) {
  absl::StatusOr<JobReport> job =
      MergeRankReportsJson({RankJson(1, 3, "j", 5)}, {"a"});
  ASSERT_TRUE(job.ok()) << job.status();
  const Json json = JobReportToJson(*job);
  EXPECT_EQ((std::vector<std::int64_t>{0, 2}),
            json["missing_ranks"].get<std::vector<std::int64_t>>());
  EXPECT_EQ("partial", json["total"]["status"]);
  EXPECT_EQ("missing_rank", json["diagnostics"][0]["code"]);
}

TEST(JobMergeTest, RefusesOtherJobs) {
  absl::StatusOr<JobReport> job = MergeRankReportsJson(
      {RankJson(0, 2, "j", 1), RankJson(1, 2, "k", 1)}, {"a.json", "b.json"});
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(
      "the reports are not from one job: a.json has job id j but b.json has "
      "job id k",
      std::string(job.status().message()));
}

TEST(JobMergeTest, RefusesOtherWorldSizes) {
  absl::StatusOr<JobReport> job = MergeRankReportsJson(
      {RankJson(0, 2, "j", 1), RankJson(1, 4, "j", 1)}, {"a", "b"});
  ASSERT_FALSE(job.ok());
  EXPECT_NE(std::string::npos, job.status().message().find("world size 2"));
}

TEST(JobMergeTest, RefusesOtherSchemaVersions) {
  Json second = RankJson(1, 2, "j", 1);
  second["schema_version"] = 2;
  absl::StatusOr<JobReport> job =
      MergeRankReportsJson({RankJson(0, 2, "j", 1), second}, {"a", "b"});
  ASSERT_FALSE(job.ok());
  EXPECT_NE(std::string::npos, job.status().message().find("schema"));
}

TEST(JobMergeTest, RefusesDuplicateRanks) {
  absl::StatusOr<JobReport> job = MergeRankReportsJson(
      {RankJson(0, 2, "j", 1), RankJson(0, 2, "j", 1)}, {"a", "b"});
  ASSERT_FALSE(job.ok());
  EXPECT_EQ("rank 0 appears twice: in a and in b",
            std::string(job.status().message()));
}

TEST(JobMergeTest, RefusesReportsWithoutContext) {
  Json json = RankJson(0, 2, "j", 1);
  json.erase("distributed");
  absl::StatusOr<JobReport> job = MergeRankReportsJson({json}, {"a"});
  ASSERT_FALSE(job.ok());
  EXPECT_NE(std::string::npos,
            job.status().message().find("a.distributed: is missing"));
}

}  // namespace
}  // namespace torchscan::report
