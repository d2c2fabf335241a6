// One job report from the per-rank reports of a distributed job.
//
// Each rank's FlopReport (measure_flops, FlopCountingGuard) made inside a
// process group carries a "distributed" context (job id, rank, world size,
// backend, process groups) and, when collectives ran, a "communication"
// section (report/communication.h). MergeRankReports checks that the
// reports belong together and combines them: FLOP totals and per-operator
// FLOPs summed, per-rank totals with min / max / imbalance, communication by
// kind summed, and the ranks no report came from.

#ifndef TORCHSCAN_REPORT_JOB_MERGE_H_
#define TORCHSCAN_REPORT_JOB_MERGE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "report/communication.h"
#include "report/count.h"
#include "report/diagnostic.h"
#include "report/field_table.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "report/json_reader.h"
#include "report/metric_result.h"

namespace torchscan::report {

inline constexpr int kJobReportSchemaVersion = 1;

// The DeviceMesh dimension a process group was made for
// (docs/distributed.md, "Process groups and mesh dimensions", has the rule
// that finds it).
struct MeshDimension {
  std::string name;                   // "dp", or "dim_0" in unnamed meshes
  std::optional<std::int64_t> index;  // nullopt when it could not be told

  bool operator==(const MeshDimension&) const = default;
  // {"name", "index"}, the index null when it could not be told.
  static constexpr auto kFields =
      std::make_tuple(Field("name", &MeshDimension::name),
                      FieldAs<IndexCodec>("index", &MeshDimension::index));
};

struct ProcessGroupLayout {
  std::string name;
  std::vector<std::int64_t> ranks;  // global ranks, in group-rank order
  // Set when the group is a DeviceMesh dimension's.
  std::optional<MeshDimension> mesh_dim;

  bool operator==(const ProcessGroupLayout&) const = default;
};

// {"name", "size", "ranks", "mesh_dim"?}: "size", the number of its ranks,
// is written for readers of the file and checked on reading (a codec, not
// a table: no member holds it).
template <>
struct JsonCodec<ProcessGroupLayout> {
  static Json Write(const ProcessGroupLayout& group);
  static absl::StatusOr<ProcessGroupLayout> Read(const JsonValue& node);
};

// Where a report was made (the "distributed" member of a FlopReport).
struct DistributedContext {
  // Identifies the job: equal on every rank of one job (docs/distributed.md
  // says how it is derived).
  std::string job_id;
  std::int64_t rank = 0;
  std::int64_t world_size = 1;
  std::string backend;
  std::vector<ProcessGroupLayout> groups;

  bool operator==(const DistributedContext&) const = default;
  // The job id is not empty; the rank is in the world, of at least 1.
  absl::Status Validate(absl::string_view path) const;
  static constexpr auto kFields = std::make_tuple(
      Field("job_id", &DistributedContext::job_id),
      FieldAs<IndexCodec>("rank", &DistributedContext::rank),
      FieldAs<IndexCodec>("world_size", &DistributedContext::world_size),
      Field("backend", &DistributedContext::backend),
      Field("groups", &DistributedContext::groups));
};

// {"job_id", "rank", "world_size", "backend", "groups": [{"name", "size",
//  "ranks", "mesh_dim": {"name", "index"} (only for a mesh dimension's
//  group)}]}: ToJson, by the name its callers know.
Json DistributedContextToJson(const DistributedContext& context);
// FromJson<DistributedContext> at path `field`: unknown members are
// refused, and a group's "size" must be the number of its ranks.
absl::StatusOr<DistributedContext> DistributedContextFromJson(
    const Json& node, absl::string_view field = "distributed");

// One rank's report: its FlopReport's keys, then "distributed" and, when a
// collective ran, "communication". Like a FlopReport it accepts and drops
// keys it does not know (a FlopCounter's "formulas").
struct RankReport {
  FlopReport flops;
  DistributedContext context;
  CommunicationReport communication;

  bool operator==(const RankReport&) const = default;
  // "distributed" is present: "<path>.distributed: is missing: the report
  // was not made inside a process group, so it cannot be merged into a job
  // report".
  absl::Status Validate(const JsonObject& object) const;
  static constexpr bool kAcceptsUnknownKeys = true;
  static constexpr auto kFields = std::make_tuple(
      FieldsOf(&RankReport::flops),
      Field("distributed", &RankReport::context, kOptional),
      Field("communication", &RankReport::communication, kOptional));
};

// FromJson<RankReport> at path `field`.
absl::StatusOr<RankReport> RankReportFromJson(const Json& node,
                                              absl::string_view field);

// What a job report is: its "kind".
enum class JobReportKind { kJobReport };
absl::Span<const std::pair<JobReportKind, absl::string_view>> EnumNames(
    JobReportKind);

// A job's metric summed over its ranks, and each rank's part: the metric's
// keys, then "per_rank": {rank: metric}.
struct JobMetric {
  MetricResult total = MetricResult::Unavailable({});
  std::map<std::int64_t, MetricResult> per_rank;

  bool operator==(const JobMetric&) const = default;
  static constexpr auto kFields = std::make_tuple(
      FieldsOf(&JobMetric::total), Field("per_rank", &JobMetric::per_rank));
};

// A job's bytes moved (each rank's FlopReport::bytes summed) and their
// upper bound (NOTE [A job's upper bound] in job_merge.cc says what a rank
// without one adds), absent when no rank has one (no compiled graph ran
// anywhere).
struct JobBytes {
  MetricResult total = MetricResult::Unavailable({});
  std::map<std::int64_t, MetricResult> per_rank;
  std::optional<JobMetric> upper_bound;

  bool operator==(const JobBytes&) const = default;
  static constexpr auto kFields = std::make_tuple(
      FieldsOf(&JobBytes::total), Field("per_rank", &JobBytes::per_rank),
      Field("upper_bound", &JobBytes::upper_bound, kOptional));
};

// Groups by name, written as an array of them in name order; a name twice is
// "<path>[i].name: names the process group 'x' again".
struct ProcessGroupsByNameCodec {
  static Json Write(const std::map<std::string, ProcessGroupLayout>& groups);
  static absl::StatusOr<std::map<std::string, ProcessGroupLayout>> Read(
      const JsonValue& node);
};

// Its JSON: {"schema_version", "kind": "job_report", "job_id",
// "world_size", "backend", "ranks", "missing_ranks", "total", "per_rank":
// {rank: value}, "rank_min", "rank_max", "imbalance", "by_operator",
// "by_precision"?, "by_operator_precision"?, "bytes"? (the total's members,
// "per_rank", and "upper_bound"? with its own "per_rank"), "communication",
// "communication_per_rank", "diagnostics", "groups": [{"name", "size",
// "ranks", "mesh_dim"?}]} (docs/report-schema.md). rank_min, rank_max and
// imbalance are derived from per_rank: read back, they must be what it
// implies.
struct JobReport {
  int schema_version = kJobReportSchemaVersion;
  JobReportKind kind = JobReportKind::kJobReport;
  std::string job_id;
  std::int64_t world_size = 0;
  std::string backend;
  // Ranks with a report, and those without one (the total is then partial).
  std::vector<std::int64_t> ranks;
  std::vector<std::int64_t> missing_ranks;
  // Sum over the ranks present; partial when a rank's is, or a rank is
  // missing.
  MetricResult total = MetricResult::Unavailable({});
  std::map<std::int64_t, MetricResult> per_rank;
  std::map<std::string, Count> by_operator;
  // The ranks' FlopReport by_precision summed (nonzero entries; omitted
  // from the JSON when empty).
  std::map<std::string, Count> by_precision;
  // The ranks' FlopReport by_operator_precision summed, operator by
  // operator (a rank report without one adds each operator's FLOPs as
  // "unknown", as for by_precision); omitted from the JSON when empty.
  std::map<std::string, std::map<std::string, Count>> by_operator_precision;
  // The ranks' bytes moved (FlopReport::bytes) summed, and each rank's;
  // partial when a rank's is, a rank is missing or a rank's report has no
  // bytes (written before they existed). Absent when no rank has them.
  std::optional<JobBytes> bytes;
  CommunicationReport communication;
  std::map<std::int64_t, CommunicationTotals> communication_per_rank;
  // What the job report says: a missing_rank diagnostic when ranks are
  // missing, then a bytes_upper_bound_not_known per rank whose upper bound
  // is not known.
  std::vector<Diagnostic> diagnostics;
  // Every process group some rank reported, by name: what the names in
  // communication.by_group are (their ranks and mesh dimension).
  std::map<std::string, ProcessGroupLayout> groups;

  bool operator==(const JobReport&) const = default;
  // The derived keys: the least and greatest known FLOPs of a rank, and
  // their greatest over their mean (1.0 is perfectly balanced); null
  // without ranks (or FLOPs, for the imbalance).
  static Json RankMinJson(const JobReport& report);
  static Json RankMaxJson(const JobReport& report);
  static Json ImbalanceJson(const JobReport& report);
  static constexpr const char* kDerivedFrom = "the ranks' totals";
  // groups last, so that the members before it read as they did before it
  // existed.
  static constexpr auto kFields = std::make_tuple(
      FieldAs<SchemaVersionCodec<kJobReportSchemaVersion>>(
          "schema_version", &JobReport::schema_version),
      Field("kind", &JobReport::kind), Field("job_id", &JobReport::job_id),
      FieldAs<IndexCodec>("world_size", &JobReport::world_size),
      Field("backend", &JobReport::backend),
      FieldAs<ArrayOf<IndexCodec>>("ranks", &JobReport::ranks),
      FieldAs<ArrayOf<IndexCodec>>("missing_ranks", &JobReport::missing_ranks),
      Field("total", &JobReport::total),
      Field("per_rank", &JobReport::per_rank),
      Derived("rank_min", &RankMinJson), Derived("rank_max", &RankMaxJson),
      Derived("imbalance", &ImbalanceJson),
      FieldAs<MapOf<NonNegativeCountCodec>>("by_operator",
                                            &JobReport::by_operator),
      FieldAs<MapOf<NonNegativeCountCodec>>(
          "by_precision", &JobReport::by_precision, kOptional),
      FieldAs<MapOf<MapOf<NonNegativeCountCodec>>>(
          "by_operator_precision", &JobReport::by_operator_precision,
          kOptional),
      Field("bytes", &JobReport::bytes, kOptional),
      Field("communication", &JobReport::communication),
      Field("communication_per_rank", &JobReport::communication_per_rank),
      Field("diagnostics", &JobReport::diagnostics),
      FieldAs<ProcessGroupsByNameCodec>("groups", &JobReport::groups));
};

// Fails (InvalidArgument, naming both reports) when the reports come from
// different jobs, world sizes, schema versions or torch versions, when a
// rank appears twice or is out of range, when two reports describe one
// process group differently (other ranks, sizes or mesh dimensions), or when
// there are none. A mesh dimension whose index one rank could not tell takes
// the index another rank gives.
absl::StatusOr<JobReport> MergeRankReports(absl::Span<const RankReport> ranks);
// The same with `names` labelling the reports in errors (file names; a
// report without a name is "report <i>").
absl::StatusOr<JobReport> MergeRankReportsNamed(
    absl::Span<const RankReport> ranks, absl::Span<const std::string> names);
// The same from JSON documents; `names` label them in errors (file names).
absl::StatusOr<JobReport> MergeRankReportsJson(
    absl::Span<const Json> reports, absl::Span<const std::string> names);

// ToJson, by the name its callers know.
Json JobReportToJson(const JobReport& report);
// FromJson<JobReport> at path `field`.
absl::StatusOr<JobReport> JobReportFromJson(const Json& node,
                                            absl::string_view field = "job");

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_JOB_MERGE_H_
