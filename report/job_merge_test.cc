#include "report/job_merge.h"

#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "report/communication.h"
#include "report/field_table_testing.h"
#include "report/json_io.h"
#include "report/test_support.h"

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
      report.Add("c10d.allreduce_", CollectiveKind::kAllReduce, "1", 2, 400)
          .ok());
  EXPECT_TRUE(
      report.Add("c10d.allreduce_", CollectiveKind::kAllReduce, "2", 2, 100)
          .ok());
  EXPECT_TRUE(
      report
          .Add("c10d._allgather_base_", CollectiveKind::kAllGather, "0", 4, 64)
          .ok());
  return report;
}

}  // namespace

template <>
struct FieldTableSamples<CommunicationTotals> {
  static std::vector<CommunicationTotals> Get() {
    return {{}, {3, Count(1) << 70, 548}};
  }
};
template <>
struct FieldTableSamples<UnreadableCollective> {
  static std::vector<UnreadableCollective> Get() { return {{2, "no group"}}; }
};

template <>
struct FieldTableSamples<CommunicationReport> {
  static std::vector<CommunicationReport> Get() {
    CommunicationReport full = SampleCommunication();
    EXPECT_TRUE(
        full.Add("c10d.barrier", CollectiveKind::kBarrier, "0", 4, 0).ok());
    EXPECT_TRUE(full.AddUnreadable("c10d.send", "no peer").ok());
    return {CommunicationReport{}, full};
  }
};

template <>
struct FieldTableSamples<MeshDimension> {
  static std::vector<MeshDimension> Get() { return {{"dp", 1}, {"dim_0", {}}}; }
};
template <>
struct FieldTableSamples<DistributedContext> {
  static std::vector<DistributedContext> Get() {
    return {DistributedContext{"j", 0, 1, "gloo", {}},
            DistributedContext{"job",
                               3,
                               4,
                               "nccl",
                               {{"0", {0, 1, 2, 3}, std::nullopt},
                                {"1", {2, 3}, MeshDimension{"tp", 1}}}}};
  }
};

template <>
struct FieldTableSamples<RankReport> {
  static std::vector<RankReport> Get() {
    RankReport bare;
    bare.context = DistributedContext{"j", 0, 1, "gloo", {}};
    RankReport full;
    full.flops = testing::FlopReportWithEveryMember();
    full.context = FieldTableSamples<DistributedContext>::Get()[1];
    full.communication = FieldTableSamples<CommunicationReport>::Get()[1];
    return {bare, full};
  }
};

namespace {

using CommunicationRecords =
    ::testing::Types<CommunicationTotals, UnreadableCollective,
                     CommunicationReport>;
INSTANTIATE_TYPED_TEST_SUITE_P(Communication, FieldTableRoundTrip,
                               CommunicationRecords);

using DistributedRecords =
    ::testing::Types<MeshDimension, DistributedContext, RankReport>;
INSTANTIATE_TYPED_TEST_SUITE_P(Distributed, FieldTableRoundTrip,
                               DistributedRecords);

// A group's size is written for readers of the file and must be the number
// of its ranks; a context's rank lies in its world.
TEST(JobMergeTest, AContextChecksItsGroupsAndItsRank) {
  Json context = ToJson(FieldTableSamples<DistributedContext>::Get()[1]);
  EXPECT_EQ(R"({"name":"1","size":2,"ranks":[2,3],)"
            R"("mesh_dim":{"name":"tp","index":1}})",
            DumpJson(context["groups"][1]));
  Json bad_size = context;
  bad_size["groups"][1]["size"] = 3;
  absl::StatusOr<DistributedContext> read =
      FromJson<DistributedContext>(JsonValue(bad_size, "distributed"));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ("distributed.groups[1].size: is 3 but the group lists 2 ranks",
            read.status().message());
  Json outside = context;
  outside["rank"] = 4;
  read = FromJson<DistributedContext>(JsonValue(outside, "distributed"));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ("distributed: rank 4 is not in a world of size 4",
            read.status().message());
  Json unnamed = context;
  unnamed["job_id"] = "";
  read = FromJson<DistributedContext>(JsonValue(unnamed, "distributed"));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ("distributed.job_id: is empty", read.status().message());
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
  EXPECT_EQ(3u, json["by_operator"].size());
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

TEST(CommunicationTest, BreaksDownByGroup) {
  const Json json = CommunicationToJson(SampleCommunication());
  // Groups "1" and "2" both have 2 ranks: one by_group_size bucket, two
  // groups.
  EXPECT_EQ(2, json["by_kind"]["all_reduce"]["by_group_size"]["2"]["calls"]);
  const Json& by_group = json["by_group"];
  ASSERT_EQ(3u, by_group.size());
  EXPECT_EQ(2, by_group["1"]["size"]);
  EXPECT_EQ(1, by_group["1"]["calls"]);
  EXPECT_EQ(400, by_group["1"]["payload_bytes"]);
  EXPECT_EQ(400, by_group["1"]["bus_bytes"]);  // 2(n-1)/n = 1
  EXPECT_EQ(100, by_group["2"]["by_kind"]["all_reduce"]["payload_bytes"]);
  EXPECT_EQ(4, by_group["0"]["size"]);
  EXPECT_EQ(48, by_group["0"]["by_kind"]["all_gather"]["bus_bytes"]);
  // Added last: the members that were there before keep their order.
  EXPECT_EQ("by_group", std::prev(json.end()).key());
}

TEST(CommunicationTest, RefusesAGroupWithTwoSizes) {
  CommunicationReport report = SampleCommunication();
  const CommunicationReport before = report;
  absl::Status added =
      report.Add("c10d.allreduce_", CollectiveKind::kAllReduce, "1", 4, 8);
  ASSERT_FALSE(added.ok());
  EXPECT_EQ("process group '1' has 2 ranks in one place and 4 in another",
            added.message());
  EXPECT_EQ(before, report);

  CommunicationReport other;
  ASSERT_TRUE(
      other.Add("c10d.allreduce_", CollectiveKind::kAllReduce, "0", 2, 8).ok());
  EXPECT_FALSE(report.Merge(other).ok());
  EXPECT_EQ(before, report);
}

TEST(CommunicationTest, MergeSumsGroups) {
  CommunicationReport report = SampleCommunication();
  ASSERT_TRUE(report.Merge(SampleCommunication()).ok());
  EXPECT_EQ(2, report.by_group["1"].by_kind[CollectiveKind::kAllReduce].calls);
  EXPECT_EQ(
      800,
      report.by_group["1"].by_kind[CollectiveKind::kAllReduce].payload_bytes);
  absl::StatusOr<CommunicationReport> read =
      CommunicationFromJson(CommunicationToJson(report));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(report, *read);
}

TEST(CommunicationTest, RefusesGroupsThatDisagreeWithKinds) {
  // Consistent derived members, but a call more than by_kind has.
  CommunicationReport extra = SampleCommunication();
  extra.by_group["1"].by_kind[CollectiveKind::kAllReduce].calls += 1;
  Json json = CommunicationToJson(SampleCommunication());
  json["by_group"] = CommunicationToJson(extra)["by_group"];
  absl::StatusOr<CommunicationReport> read = CommunicationFromJson(json);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(
      "communication.by_group: does not hold the same calls and payload bytes "
      "as by_kind (per kind and group size)",
      read.status().message());
}

TEST(CommunicationTest, RefusesWrongGroupBusBytes) {
  Json json = CommunicationToJson(SampleCommunication());
  json["by_group"]["0"]["by_kind"]["all_gather"]["bus_bytes"] = 64;
  absl::StatusOr<CommunicationReport> read = CommunicationFromJson(json);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(std::string::npos,
            read.status().message().find("communication.by_group: does not "
                                         "match the collectives listed"));
}

TEST(CommunicationTest, RefusesUnknownAndMissingMembers) {
  Json json = CommunicationToJson(SampleCommunication());
  json["by_mesh"] = Json::object();
  absl::StatusOr<CommunicationReport> read = CommunicationFromJson(json);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ("communication.by_mesh: unknown field", read.status().message());

  json = CommunicationToJson(SampleCommunication());
  json["by_group"]["1"]["mesh"] = "dp";
  read = CommunicationFromJson(json);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ("communication.by_group.1.mesh: unknown field",
            read.status().message());

  json = CommunicationToJson(SampleCommunication());
  json.erase("by_group");
  read = CommunicationFromJson(json);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ("communication.by_group: is missing", read.status().message());
}

Json RankJson(int rank, int world, std::string job, long flops) {
  FlopReport flop_report;
  flop_report.torch_version = "2.13.0";
  flop_report.total = MetricResult::Complete(Count(flops), OperatorFlopsKind());
  flop_report.by_operator["aten.mm"] = flops;
  Json json = FlopReportToJson(flop_report);
  DistributedContext context{
      job, rank, world, "gloo", {{"0", {0, 1}, std::nullopt}}};
  json["distributed"] = DistributedContextToJson(context);
  CommunicationReport comm;
  EXPECT_TRUE(
      comm.Add("c10d.allreduce_", CollectiveKind::kAllReduce, "0", world, 100)
          .ok());
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

TEST(JobMergeTest, SumsPrecisionsAndTreatsAReportWithoutThemAsUnknown) {
  Json rank0 = RankJson(0, 2, "j", 100);
  rank0["by_precision"] = Json::object();
  rank0["by_precision"]["bf16"] = 60;
  rank0["by_precision"]["fp8"] = 40;
  // Rank 1 was written before by_precision existed: its 300 are unknown.
  absl::StatusOr<JobReport> job =
      MergeRankReportsJson({rank0, RankJson(1, 2, "j", 300)}, {"a", "b"});
  ASSERT_TRUE(job.ok()) << job.status();
  const Json json = JobReportToJson(*job);
  EXPECT_EQ(60, json["by_precision"]["bf16"]);
  EXPECT_EQ(40, json["by_precision"]["fp8"]);
  EXPECT_EQ(300, json["by_precision"]["unknown"]);
  EXPECT_EQ(3u, json["by_precision"].size());
}

// The split per operator is summed too; a rank without one adds each
// operator's FLOPs as unknown, so the job's split sums to its by_operator.
TEST(JobMergeTest, SumsOperatorPrecisionsAndTreatsAReportWithoutThemAsUnknown) {
  auto split = [](Json json, long bf16, long fp8) {
    json["by_precision"] = Json::object();
    json["by_precision"]["bf16"] = bf16;
    json["by_precision"]["fp8"] = fp8;
    json["by_operator_precision"]["aten.mm"] = json["by_precision"];
    return json;
  };
  absl::StatusOr<JobReport> job = MergeRankReportsJson(
      {split(RankJson(0, 3, "j", 100), 60, 40),
       split(RankJson(1, 3, "j", 300), 200, 100), RankJson(2, 3, "j", 7)},
      {"a", "b", "c"});
  ASSERT_TRUE(job.ok()) << job.status();
  const Json json = JobReportToJson(*job);
  EXPECT_EQ(260, json["by_operator_precision"]["aten.mm"]["bf16"]);
  EXPECT_EQ(140, json["by_operator_precision"]["aten.mm"]["fp8"]);
  EXPECT_EQ(7, json["by_operator_precision"]["aten.mm"]["unknown"]);
  EXPECT_EQ(3u, json["by_operator_precision"]["aten.mm"].size());
  EXPECT_EQ(407, json["by_operator"]["aten.mm"]);
}

// Bytes moved: each rank's summed; a rank without them (written before
// they existed) makes the job's partial; none with them, no member.
TEST(JobMergeTest, SumsBytesPerRank) {
  auto with_bytes = [](Json json, long read, long written) {
    BytesMoved bytes;
    bytes.read = read;
    bytes.written = written;
    bytes.total =
        MetricResult::Complete(Count(read + written), BytesMovedKind());
    FlopReport report;
    report.bytes = bytes;
    json["bytes"] = FlopReportToJson(report)["bytes"];
    return json;
  };
  absl::StatusOr<JobReport> job =
      MergeRankReportsJson({with_bytes(RankJson(0, 2, "j", 100), 30, 10),
                            with_bytes(RankJson(1, 2, "j", 300), 50, 20)},
                           {"a", "b"});
  ASSERT_TRUE(job.ok()) << job.status();
  Json json = JobReportToJson(*job);
  EXPECT_EQ("complete", json["bytes"]["status"]);
  EXPECT_EQ(110, json["bytes"]["value"]);
  EXPECT_EQ("bytes", json["bytes"]["unit"]);
  EXPECT_EQ("job", json["bytes"]["scope"]);
  EXPECT_EQ(70, json["bytes"]["per_rank"]["1"]["value"]);

  job = MergeRankReportsJson(
      {with_bytes(RankJson(0, 2, "j", 100), 30, 10), RankJson(1, 2, "j", 300)},
      {"a", "b"});
  ASSERT_TRUE(job.ok()) << job.status();
  json = JobReportToJson(*job);
  EXPECT_EQ("partial", json["bytes"]["status"]);
  EXPECT_EQ(40, json["bytes"]["known_value"]);

  job = MergeRankReportsJson({RankJson(0, 2, "j", 100)}, {"a"});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_FALSE(JobReportToJson(*job).contains("bytes"));
}

// A rank's bytes: `read` + `written`, complete unless `partial`, with an
// upper bound of `upper` when a compiled graph ran there (upper > 0).
Json WithBytes(Json json, long read, long written, long upper = 0,
               bool partial = false) {
  BytesMoved bytes;
  bytes.read = read;
  bytes.written = written;
  bytes.total =
      partial || upper > 0
          ? MetricResult::Partial(Count(read + written), BytesMovedKind())
          : MetricResult::Complete(Count(read + written), BytesMovedKind());
  if (upper > 0) {
    bytes.diagnostics.push_back(Diagnostic::ForOperator(
        std::string(kCompiledRegionBytes), "bytes",
        std::string(kCompiledGraphOperator), "compiled graph 0/0 ran"));
    bytes.upper_bound =
        MetricResult::Complete(Count(upper), UnfusedBytesKind());
  }
  FlopReport report;
  report.bytes = bytes;
  json["bytes"] = FlopReportToJson(report)["bytes"];
  return json;
}

// Rank 0 ran a compiled graph (upper bound 500), rank 1 none: its complete
// 70 bytes are its upper bound too, so the job's is 500 + 70, complete.
TEST(JobMergeTest, SumsUpperBoundsTakingBytesOfRanksWithoutCompiledGraphs) {
  absl::StatusOr<JobReport> job =
      MergeRankReportsJson({WithBytes(RankJson(0, 2, "j", 100), 30, 10, 500),
                            WithBytes(RankJson(1, 2, "j", 300), 50, 20)},
                           {"a", "b"});
  ASSERT_TRUE(job.ok()) << job.status();
  const Json json = JobReportToJson(*job);
  EXPECT_EQ("partial", json["bytes"]["status"]);
  EXPECT_EQ(110, json["bytes"]["known_value"]);
  const Json& upper = json["bytes"]["upper_bound"];
  EXPECT_EQ("complete", upper["status"]);
  EXPECT_EQ(570, upper["value"]);
  EXPECT_EQ("job", upper["scope"]);
  EXPECT_EQ(std::string(kUnfusedBytesMethod), upper["method"]);
  EXPECT_EQ(500, upper["per_rank"]["0"]["value"]);
  EXPECT_EQ(70, upper["per_rank"]["1"]["value"]);
  EXPECT_EQ(std::string(kUnfusedBytesMethod), upper["per_rank"]["1"]["method"]);
  EXPECT_TRUE(json["diagnostics"].empty());
}

// A rank without compiled graphs whose bytes are partial adds them as a
// partial upper bound: the job's is partial, with no diagnostic of its own
// (the rank's bytes diagnostics say why).
TEST(JobMergeTest, PartialBytesOfARankMakeTheUpperBoundPartial) {
  absl::StatusOr<JobReport> job = MergeRankReportsJson(
      {WithBytes(RankJson(0, 2, "j", 100), 30, 10, 500),
       WithBytes(RankJson(1, 2, "j", 300), 50, 20, 0, /*partial=*/true)},
      {"a", "b"});
  ASSERT_TRUE(job.ok()) << job.status();
  const Json json = JobReportToJson(*job);
  EXPECT_EQ("partial", json["bytes"]["upper_bound"]["status"]);
  EXPECT_EQ(570, json["bytes"]["upper_bound"]["known_value"]);
  EXPECT_EQ("partial", json["bytes"]["upper_bound"]["per_rank"]["1"]["status"]);
  EXPECT_TRUE(json["diagnostics"].empty());
}

// A rank without bytes adds nothing and is named; so is a rank whose bytes
// name a compiled graph without an upper bound (its bytes stand in).
TEST(JobMergeTest, NamesRanksWhoseUpperBoundIsNotKnown) {
  Json stale = WithBytes(RankJson(1, 3, "j", 300), 50, 20, 900);
  stale["bytes"].erase("upper_bound");
  absl::StatusOr<JobReport> job =
      MergeRankReportsJson({WithBytes(RankJson(0, 3, "j", 100), 30, 10, 500),
                            stale, RankJson(2, 3, "j", 7)},
                           {"a", "b", "c"});
  ASSERT_TRUE(job.ok()) << job.status();
  const Json json = JobReportToJson(*job);
  const Json& upper = json["bytes"]["upper_bound"];
  EXPECT_EQ("partial", upper["status"]);
  EXPECT_EQ(570, upper["known_value"]);
  EXPECT_EQ(2u, upper["per_rank"].size());
  ASSERT_EQ(2u, json["diagnostics"].size());
  EXPECT_EQ("bytes_upper_bound_not_known", json["diagnostics"][0]["code"]);
  EXPECT_EQ(
      "rank 1's report names a compiled graph in its bytes but has no "
      "bytes.upper_bound: its bytes (a lower bound) stand in, so the job's "
      "bytes upper bound is partial",
      json["diagnostics"][0]["message"]);
  EXPECT_EQ(
      "rank 2's report has no bytes: it adds nothing, so the job's bytes "
      "upper bound is partial",
      json["diagnostics"][1]["message"]);
}

// A missing rank makes the upper bound partial, as it does the bytes; no
// rank with an upper bound, no member.
TEST(JobMergeTest, UpperBoundIsPartialWithMissingRanksAndAbsentWithoutOne) {
  absl::StatusOr<JobReport> job = MergeRankReportsJson(
      {WithBytes(RankJson(0, 2, "j", 100), 30, 10, 500)}, {"a"});
  ASSERT_TRUE(job.ok()) << job.status();
  Json json = JobReportToJson(*job);
  EXPECT_EQ("partial", json["bytes"]["upper_bound"]["status"]);
  EXPECT_EQ(500, json["bytes"]["upper_bound"]["known_value"]);

  job = MergeRankReportsJson({WithBytes(RankJson(0, 2, "j", 100), 30, 10),
                              WithBytes(RankJson(1, 2, "j", 300), 50, 20)},
                             {"a", "b"});
  ASSERT_TRUE(job.ok()) << job.status();
  json = JobReportToJson(*job);
  EXPECT_FALSE(json["bytes"].contains("upper_bound"));
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

Json ElementwiseRankJson(int rank, int world, std::string job, long flops) {
  Json json = RankJson(rank, world, std::move(job), flops);
  json["context"]["method"] = std::string(kElementwiseFlopsMethod);
  json["total"]["method"] = std::string(kElementwiseFlopsMethod);
  return json;
}

TEST(JobMergeTest, KeepsTheRanksElementwiseMethod) {
  absl::StatusOr<JobReport> job = MergeRankReportsJson(
      {ElementwiseRankJson(0, 2, "j", 100), ElementwiseRankJson(1, 2, "j", 5)},
      {"a", "b"});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->total.method(), kElementwiseFlopsMethod);
  EXPECT_EQ(std::get<Count>(*job->total.value()), 105);
}

TEST(JobMergeTest, RefusesRanksCountedUnderDifferentMethods) {
  absl::StatusOr<JobReport> job = MergeRankReportsJson(
      {RankJson(0, 2, "j", 1), ElementwiseRankJson(1, 2, "j", 1)}, {"a", "b"});
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(absl::StrCat("the reports are not from one job: a has method ",
                         kOperatorFlopsMethod, " but b has method ",
                         kElementwiseFlopsMethod),
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

// Rank `rank` of a 2 x 2 mesh ("dp", "tp") over 4 ranks: groups named as
// torch names them (dp groups [0, 2] "2" and [1, 3] "3", tp groups [0, 1]
// "4" and [2, 3] "5"), one all-reduce of 64 bytes on each of its groups.
Json MeshRankJson(int rank) {
  FlopReport flop_report;
  flop_report.torch_version = "2.13.0";
  flop_report.total = MetricResult::Complete(Count(10), OperatorFlopsKind());
  Json json = FlopReportToJson(flop_report);
  const std::string dp = rank % 2 == 0 ? "2" : "3";
  const std::string tp = rank < 2 ? "4" : "5";
  const std::vector<std::int64_t> dp_ranks =
      rank % 2 == 0 ? std::vector<std::int64_t>{0, 2}
                    : std::vector<std::int64_t>{1, 3};
  const std::vector<std::int64_t> tp_ranks =
      rank < 2 ? std::vector<std::int64_t>{0, 1}
               : std::vector<std::int64_t>{2, 3};
  DistributedContext context{"j",
                             rank,
                             4,
                             "gloo",
                             {{"0", {0, 1, 2, 3}, std::nullopt},
                              {dp, dp_ranks, MeshDimension{"dp", 0}},
                              {tp, tp_ranks, MeshDimension{"tp", 1}}}};
  json["distributed"] = DistributedContextToJson(context);
  CommunicationReport comm;
  EXPECT_TRUE(
      comm.Add("c10d.allreduce_", CollectiveKind::kAllReduce, dp, 2, 64).ok());
  EXPECT_TRUE(
      comm.Add("c10d.allreduce_", CollectiveKind::kAllReduce, tp, 2, 64).ok());
  json["communication"] = CommunicationToJson(comm);
  return json;
}

TEST(DistributedContextTest, JsonRoundTripsMeshDimensions) {
  const Json json = MeshRankJson(1)["distributed"];
  EXPECT_FALSE(json["groups"][0].contains("mesh_dim"));
  EXPECT_EQ("dp", json["groups"][1]["mesh_dim"]["name"]);
  EXPECT_EQ(0, json["groups"][1]["mesh_dim"]["index"]);
  absl::StatusOr<DistributedContext> read = DistributedContextFromJson(json);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(json, DistributedContextToJson(*read));
  ASSERT_EQ(3, read->groups.size());
  EXPECT_EQ((MeshDimension{"tp", 1}), read->groups[2].mesh_dim);

  Json unknown_index = json;
  unknown_index["groups"][1]["mesh_dim"]["index"] = nullptr;
  read = DistributedContextFromJson(unknown_index);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((MeshDimension{"dp", std::nullopt}), read->groups[1].mesh_dim);
}

TEST(DistributedContextTest, RefusesUnknownMembersAndWrongSizes) {
  Json json = MeshRankJson(0)["distributed"];
  json["groups"][1]["mesh_dim"]["size"] = 2;
  absl::StatusOr<DistributedContext> read = DistributedContextFromJson(json);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ("distributed.groups[1].mesh_dim.size: unknown field",
            read.status().message());

  json = MeshRankJson(0)["distributed"];
  json["groups"][2]["size"] = 3;
  read = DistributedContextFromJson(json);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ("distributed.groups[2].size: is 3 but the group lists 2 ranks",
            read.status().message());

  json = MeshRankJson(0)["distributed"];
  json["mesh"] = "2x2";
  read = DistributedContextFromJson(json);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ("distributed.mesh: unknown field", read.status().message());
}

TEST(JobMergeTest, SumsGroupsAndListsTheirMeshDimensions) {
  std::vector<Json> ranks;
  for (int rank = 0; rank < 4; ++rank) ranks.push_back(MeshRankJson(rank));
  // One rank could not tell the index of its tp dimension: the others can.
  ranks[3]["distributed"]["groups"][2]["mesh_dim"]["index"] = nullptr;
  absl::StatusOr<JobReport> job =
      MergeRankReportsJson(ranks, {"r0", "r1", "r2", "r3"});
  ASSERT_TRUE(job.ok()) << job.status();
  const Json json = JobReportToJson(*job);
  const Json& by_group = json["communication"]["by_group"];
  ASSERT_EQ(4, by_group.size());
  for (const char* name : {"2", "3", "4", "5"}) {
    EXPECT_EQ(2, by_group[name]["calls"]) << name;  // one per member rank
    EXPECT_EQ(128, by_group[name]["payload_bytes"]) << name;
    EXPECT_EQ(2, by_group[name]["size"]) << name;
  }
  EXPECT_EQ(8, json["communication"]["by_kind"]["all_reduce"]["calls"]);
  const Json& groups = json["groups"];
  ASSERT_EQ(5, groups.size());
  EXPECT_EQ("0", groups[0]["name"]);
  EXPECT_FALSE(groups[0].contains("mesh_dim"));
  EXPECT_EQ((std::vector<std::int64_t>{1, 3}),
            groups[2]["ranks"].get<std::vector<std::int64_t>>());
  EXPECT_EQ("dp", groups[2]["mesh_dim"]["name"]);
  EXPECT_EQ("5", groups[4]["name"]);
  EXPECT_EQ(1, groups[4]["mesh_dim"]["index"]);
  EXPECT_EQ("groups", std::prev(json.end()).key());
}

TEST(JobMergeTest, RefusesOneGroupDescribedTwoWays) {
  Json other = MeshRankJson(2);
  other["distributed"]["groups"][1]["ranks"] = {0, 3};
  absl::StatusOr<JobReport> job =
      MergeRankReportsJson({MeshRankJson(0), other}, {"a", "b"});
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(
      "the reports are not from one job: a has process group 2 with ranks "
      "[0, 2] but b has process group 2 with ranks [0, 3]",
      job.status().message());

  other = MeshRankJson(2);
  other["distributed"]["groups"][1]["mesh_dim"]["name"] = "tp";
  job = MergeRankReportsJson({MeshRankJson(0), other}, {"a", "b"});
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(
      "the reports are not from one job: a has process group 2 on mesh "
      "dimension dp (index 0) but b has process group 2 on mesh dimension tp "
      "(index 0)",
      job.status().message());
}

// Three ranks of four, with bytes and an upper bound, precisions, groups
// and collectives: a job report that writes every key of its table.
JobReport FullJob() {
  auto split = [](Json json, long bf16, long fp8) {
    json["by_precision"] = Json::object();
    json["by_precision"]["bf16"] = bf16;
    json["by_precision"]["fp8"] = fp8;
    json["by_operator_precision"]["aten.mm"] = json["by_precision"];
    return json;
  };
  // Rank 1's bytes name a compiled graph without an upper bound.
  Json stale = WithBytes(RankJson(1, 4, "j", 300), 50, 20, 900);
  stale["bytes"].erase("upper_bound");
  absl::StatusOr<JobReport> job = MergeRankReportsJson(
      {split(WithBytes(RankJson(0, 4, "j", 100), 30, 10, 500), 60, 40), stale,
       WithBytes(RankJson(2, 4, "j", 7), 5, 5)},
      {"a", "b", "c"});
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *std::move(job) : JobReport{};
}

}  // namespace

template <>
struct FieldTableSamples<JobMetric> {
  static std::vector<JobMetric> Get() {
    return {JobMetric{}, FullJob().bytes->upper_bound.value()};
  }
};
template <>
struct FieldTableSamples<JobBytes> {
  static std::vector<JobBytes> Get() { return {JobBytes{}, *FullJob().bytes}; }
};
template <>
struct FieldTableSamples<JobReport> {
  static std::vector<JobReport> Get() { return {JobReport{}, FullJob()}; }
};

namespace {

using JobRecords = ::testing::Types<JobMetric, JobBytes, JobReport>;
INSTANTIATE_TYPED_TEST_SUITE_P(Job, FieldTableRoundTrip, JobRecords);

TEST(JobMergeTest, AJobReportReadsBackAsItWasWritten) {
  const JobReport job = FullJob();
  const Json json = JobReportToJson(job);
  ASSERT_EQ(2u, json["diagnostics"].size());
  EXPECT_EQ("missing_rank", json["diagnostics"][0]["code"]);
  EXPECT_EQ("bytes_upper_bound_not_known", json["diagnostics"][1]["code"]);
  absl::StatusOr<JobReport> read = JobReportFromJson(json);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(job, *read);
  EXPECT_EQ(json, JobReportToJson(*read));
}

// rank_min, rank_max and imbalance follow from per_rank.
TEST(JobMergeTest, AJobReportsDerivedMembersMustMatchItsRanks) {
  Json json = JobReportToJson(FullJob());
  ASSERT_EQ(7, json["rank_min"]);
  json["rank_min"] = 8;
  absl::StatusOr<JobReport> read = JobReportFromJson(json);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ("job.rank_min: does not match the ranks' totals (expected 7)",
            read.status().message());
  json = JobReportToJson(FullJob());
  json["per_rank"]["1"]["value"] = 301;
  json["per_rank"]["1"]["known_value"] = 301;
  read = JobReportFromJson(json);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ("job.rank_max: does not match the ranks' totals (expected 301)",
            read.status().message());
}

TEST(JobMergeTest, AJobReportNamesAProcessGroupOnce) {
  Json json = JobReportToJson(FullJob());
  json["groups"].push_back(json["groups"][0]);
  const std::size_t last = json["groups"].size() - 1;
  absl::StatusOr<JobReport> read = JobReportFromJson(json);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(absl::StrCat("job.groups[", last,
                         "].name: names the process group '0' again"),
            read.status().message());
  json = JobReportToJson(FullJob());
  json["per_rank"]["01"] = json["per_rank"]["1"];
  read = JobReportFromJson(json);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ("job.per_rank.01: is not an integer key", read.status().message());
}

}  // namespace
}  // namespace torchscan::report
