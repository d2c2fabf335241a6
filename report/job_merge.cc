#include "report/job_merge.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "report/aggregate.h"
#include "report/diagnostic.h"
#include "report/field_table.h"
#include "report/json_reader.h"
#include "report/precision.h"

namespace torchscan::report {
namespace {

// The known value of a FLOP total (0 when unavailable).
Count KnownFlops(const MetricResult& result) {
  const std::optional<MetricValue>& known = result.known_value();
  if (!known || !std::holds_alternative<Count>(*known)) return 0;
  return std::get<Count>(*known);
}

absl::Status Mismatch(absl::string_view what, absl::string_view first_name,
                      absl::string_view first, absl::string_view name,
                      absl::string_view value) {
  return absl::InvalidArgumentError(
      absl::StrCat("the reports are not from one job: ", first_name, " has ",
                   what, " ", first, " but ", name, " has ", what, " ", value));
}

std::string ReportName(absl::Span<const std::string> names, std::size_t i) {
  if (i < names.size()) return names[i];
  return absl::StrCat("report ", i);
}

std::string DescribeMeshDimension(const std::optional<MeshDimension>& dim) {
  if (!dim) return "no mesh dimension";
  return absl::StrCat(
      "mesh dimension ", dim->name, " (index ",
      dim->index ? absl::StrCat(*dim->index) : std::string("unknown"), ")");
}

// NOTE [One process group, many reports]
// Every member rank reports its groups, so a job sees each group once per
// member. They must agree: the same name with other ranks means the reports
// are not of one job. A mesh dimension is found per rank
// (docs/distributed.md), so one rank may know its index and another not:
// the known index is kept; a different name or index is refused.
absl::Status AddGroup(const ProcessGroupLayout& group, absl::string_view name,
                      std::map<std::string, ProcessGroupLayout>& groups,
                      std::map<std::string, std::string>& group_sources) {
  auto [it, inserted] = groups.emplace(group.name, group);
  if (inserted) {
    group_sources[group.name] = std::string(name);
    return absl::OkStatus();
  }
  ProcessGroupLayout& known = it->second;
  const std::string& first = group_sources[group.name];
  if (known.ranks != group.ranks) {
    return Mismatch(
        absl::StrCat("process group ", group.name, " with ranks"), first,
        absl::StrCat("[", absl::StrJoin(known.ranks, ", "), "]"), name,
        absl::StrCat("[", absl::StrJoin(group.ranks, ", "), "]"));
  }
  if (known.mesh_dim == group.mesh_dim || !group.mesh_dim)
    return absl::OkStatus();
  if (!known.mesh_dim || (known.mesh_dim->name == group.mesh_dim->name &&
                          !known.mesh_dim->index)) {
    known.mesh_dim = group.mesh_dim;
    return absl::OkStatus();
  }
  if (known.mesh_dim->name == group.mesh_dim->name && !group.mesh_dim->index) {
    return absl::OkStatus();
  }
  return Mismatch(absl::StrCat("process group ", group.name, " on"), first,
                  DescribeMeshDimension(known.mesh_dim), name,
                  DescribeMeshDimension(group.mesh_dim));
}

}  // namespace

Json JsonCodec<ProcessGroupLayout>::Write(const ProcessGroupLayout& group) {
  Json entry = Json::object();
  entry["name"] = group.name;
  entry["size"] = static_cast<std::int64_t>(group.ranks.size());
  entry["ranks"] = group.ranks;
  if (group.mesh_dim) entry["mesh_dim"] = ToJson(*group.mesh_dim);
  return entry;
}

absl::StatusOr<ProcessGroupLayout> JsonCodec<ProcessGroupLayout>::Read(
    const JsonValue& value) {
  TS_ASSIGN_OR_RETURN(const JsonObject entry, value.Object());
  TS_RETURN_IF_ERROR(
      entry.RejectUnknownKeys({"name", "size", "ranks", "mesh_dim"}));
  ProcessGroupLayout group;
  TS_ASSIGN_OR_RETURN(group.name, entry.String("name"));
  TS_ASSIGN_OR_RETURN(const JsonValue ranks, entry.Member("ranks"));
  TS_ASSIGN_OR_RETURN(group.ranks, ArrayOf<IndexCodec>::Read(ranks));
  TS_ASSIGN_OR_RETURN(const std::int64_t size, entry.Index("size"));
  if (size != static_cast<std::int64_t>(group.ranks.size())) {
    return FieldError(entry.PathOf("size"),
                      absl::StrCat("is ", size, " but the group lists ",
                                   group.ranks.size(), " ranks"));
  }
  if (const std::optional<JsonValue> mesh_dim =
          entry.OptionalMember("mesh_dim")) {
    TS_ASSIGN_OR_RETURN(group.mesh_dim, FromJson<MeshDimension>(*mesh_dim));
  }
  return group;
}

absl::Status DistributedContext::Validate(absl::string_view path) const {
  if (job_id.empty()) return FieldError(MemberPath(path, "job_id"), "is empty");
  if (world_size < 1 || rank >= world_size) {
    return FieldError(
        path,
        absl::StrCat("rank ", rank, " is not in a world of size ", world_size));
  }
  return absl::OkStatus();
}

Json DistributedContextToJson(const DistributedContext& context) {
  return ToJson(context);
}

absl::StatusOr<DistributedContext> DistributedContextFromJson(
    const Json& node, absl::string_view field) {
  return FromJson<DistributedContext>(JsonValue(node, std::string(field)));
}

absl::Status RankReport::Validate(const JsonObject& object) const {
  if (object.Contains("distributed")) return absl::OkStatus();
  return FieldError(object.PathOf("distributed"),
                    "is missing: the report was not made inside a process "
                    "group, so it cannot be merged into a job report");
}

absl::StatusOr<RankReport> RankReportFromJson(const Json& node,
                                              absl::string_view field) {
  return FromJson<RankReport>(JsonValue(node, std::string(field)));
}

namespace {

// Adds `rank`'s by_operator_precision to the job's; a report without one
// (written before it existed) adds each operator's FLOPs as "unknown", so
// the job's split still sums to its by_operator.
absl::Status AddOperatorPrecisions(const FlopReport& rank, JobReport& job) {
  const std::string unknown(PrecisionName(Precision::kUnknown));
  for (const auto& [op, flops] : rank.by_operator) {
    const auto split = rank.by_operator_precision.find(op);
    if (split == rank.by_operator_precision.end()) {
      if (flops == 0) continue;
      TS_RETURN_IF_ERROR(
          AddCount(job.by_operator_precision[op][unknown], flops, "job FLOPs"));
      continue;
    }
    for (const auto& [precision, count] : split->second) {
      TS_RETURN_IF_ERROR(AddCount(job.by_operator_precision[op][precision],
                                  count, "job FLOPs"));
    }
  }
  return absl::OkStatus();
}

// NOTE [A job's upper bound]
// A report's bytes.upper_bound is set exactly when a compiled graph ran
// (flop_report.h), so a rank with bytes, no upper bound and no
// compiled_region_bytes diagnostic ran none: its upper bound is its bytes,
// with their status (a partial one is a lower bound on both). A rank whose
// bytes name a compiled graph but hold no upper bound, or that has no bytes
// (both written before the members existed), has no known upper bound: its
// bytes (a lower bound on it) or nothing are added, the job's upper bound is
// partial and a diagnostic names the rank. Missing ranks make it partial too,
// as they do the bytes.
struct RankUpperBound {
  std::optional<MetricResult> part;  // nullopt: no bytes
  bool known = true;
};

RankUpperBound UpperBoundOf(const FlopReport& report) {
  if (!report.bytes) return {std::nullopt, false};
  const BytesMoved& bytes = *report.bytes;
  if (bytes.upper_bound) return {*bytes.upper_bound, true};
  const bool compiled =
      std::any_of(bytes.diagnostics.begin(), bytes.diagnostics.end(),
                  [](const Diagnostic& diagnostic) {
                    return diagnostic.code == kCompiledRegionBytes;
                  });
  const std::optional<MetricValue>& known = bytes.total.known_value();
  const MetricValue value = known ? *known : MetricValue(Count(0));
  if (bytes.total.is_complete() && !compiled) {
    return {MetricResult::Complete(value, UnfusedBytesKind()), true};
  }
  return {MetricResult::Partial(value, UnfusedBytesKind()), !compiled};
}

Diagnostic UpperBoundNotKnown(std::int64_t rank, bool has_bytes) {
  Diagnostic diagnostic;
  diagnostic.code = "bytes_upper_bound_not_known";
  diagnostic.metric = "bytes";
  diagnostic.message = absl::StrCat(
      "rank ", rank, "'s report ",
      has_bytes ? "names a compiled graph in its bytes but has no "
                  "bytes.upper_bound: its bytes (a lower bound) stand in"
                : "has no bytes: it adds nothing",
      ", so the job's bytes upper bound is partial");
  return diagnostic;
}

// The job's bytes upper bound (NOTE [A job's upper bound]), once some rank
// has one (so job.bytes is set); `parts` holds each rank's, in the order of
// `ranks`.
absl::Status MergeUpperBounds(absl::Span<const RankReport> ranks,
                              const std::vector<RankUpperBound>& parts,
                              JobReport& job) {
  const MetricKind kind{"bytes", "job", std::string(kUnfusedBytesMethod)};
  std::vector<const MetricResult*> summed;
  JobMetric upper;
  bool all_known = job.missing_ranks.empty();
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const std::int64_t rank = ranks[i].context.rank;
    if (!parts[i].known) {
      all_known = false;
      job.diagnostics.push_back(
          UpperBoundNotKnown(rank, parts[i].part.has_value()));
    }
    if (!parts[i].part) continue;
    upper.per_rank.emplace(rank, *parts[i].part);
    summed.push_back(&*parts[i].part);
  }
  TS_ASSIGN_OR_RETURN(upper.total,
                      AggregateMetrics(summed, kind, "job bytes upper bound"));
  if (!all_known && upper.total.is_complete()) {
    upper.total = MetricResult::Partial(*upper.total.value(), kind);
  }
  job.bytes->upper_bound = std::move(upper);
  return absl::OkStatus();
}

Diagnostic MissingRanks(const JobReport& job) {
  Diagnostic missing;
  missing.code = "missing_rank";
  missing.metric = "flops";
  missing.message = absl::StrCat(
      "no report from rank(s) ", absl::StrJoin(job.missing_ranks, ", "), " of ",
      job.world_size, ": the job totals cover the others only");
  return missing;
}

}  // namespace

absl::StatusOr<JobReport> MergeRankReportsNamed(
    absl::Span<const RankReport> ranks, absl::Span<const std::string> names) {
  if (ranks.empty()) {
    return absl::InvalidArgumentError("no rank reports to merge");
  }
  const RankReport& first = ranks[0];
  const std::string first_name = ReportName(names, 0);
  JobReport job;
  job.job_id = first.context.job_id;
  job.world_size = first.context.world_size;
  job.backend = first.context.backend;
  std::map<std::int64_t, std::string> seen;
  std::map<std::string, std::string> group_sources;
  std::vector<const MetricResult*> totals;
  std::vector<const MetricResult*> byte_totals;
  std::map<std::int64_t, MetricResult> bytes_per_rank;
  bool ranks_without_bytes = false;
  std::vector<RankUpperBound> upper_bounds;
  bool any_upper_bound = false;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const RankReport& rank = ranks[i];
    const std::string name = ReportName(names, i);
    if (rank.flops.schema_version != first.flops.schema_version) {
      return Mismatch("schema version", first_name,
                      absl::StrCat(first.flops.schema_version), name,
                      absl::StrCat(rank.flops.schema_version));
    }
    if (rank.context.job_id != job.job_id) {
      return Mismatch("job id", first_name, job.job_id, name,
                      rank.context.job_id);
    }
    if (rank.context.world_size != job.world_size) {
      return Mismatch("world size", first_name, absl::StrCat(job.world_size),
                      name, absl::StrCat(rank.context.world_size));
    }
    if (rank.flops.torch_version != first.flops.torch_version) {
      return Mismatch("torch version", first_name, first.flops.torch_version,
                      name, rank.flops.torch_version);
    }
    // Ranks counted under different methods (one with the elementwise
    // convention) do not add up to one job's FLOPs.
    if (rank.flops.method != first.flops.method) {
      return Mismatch("method", first_name, first.flops.method, name,
                      rank.flops.method);
    }
    auto [it, inserted] = seen.emplace(rank.context.rank, name);
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", rank.context.rank, " appears twice: in ",
                       it->second, " and in ", name));
    }
    job.per_rank.emplace(rank.context.rank, rank.flops.total);
    totals.push_back(&rank.flops.total);
    if (rank.flops.bytes) {
      bytes_per_rank.emplace(rank.context.rank, rank.flops.bytes->total);
      byte_totals.push_back(&rank.flops.bytes->total);
    } else {
      ranks_without_bytes = true;
    }
    any_upper_bound |= rank.flops.bytes && rank.flops.bytes->upper_bound;
    upper_bounds.push_back(UpperBoundOf(rank.flops));
    for (const auto& [op, flops] : rank.flops.by_operator) {
      std::optional<Count> sum = CheckedAdd(job.by_operator[op], flops);
      if (!sum) return absl::OutOfRangeError("FLOPs overflow 128 bits");
      job.by_operator[op] = *sum;
    }
    // A rank report without by_precision (written before it existed) adds
    // its known FLOPs as "unknown", so the job's split still sums to the
    // job's known total.
    std::map<std::string, Count> rank_precisions = rank.flops.by_precision;
    if (rank_precisions.empty() && KnownFlops(rank.flops.total) > 0) {
      rank_precisions[std::string(PrecisionName(Precision::kUnknown))] =
          KnownFlops(rank.flops.total);
    }
    for (const auto& [precision, flops] : rank_precisions) {
      TS_RETURN_IF_ERROR(
          AddCount(job.by_precision[precision], flops, "job FLOPs"));
    }
    TS_RETURN_IF_ERROR(AddOperatorPrecisions(rank.flops, job));
    for (const ProcessGroupLayout& group : rank.context.groups) {
      TS_RETURN_IF_ERROR(AddGroup(group, name, job.groups, group_sources));
    }
    if (absl::Status merged = job.communication.Merge(rank.communication);
        !merged.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the reports are not from one job: ", name, ": ", merged.message()));
    }
    job.communication_per_rank[rank.context.rank] = rank.communication.Totals();
  }
  for (std::int64_t r = 0; r < job.world_size; ++r) {
    if (seen.count(r)) {
      job.ranks.push_back(r);
    } else {
      job.missing_ranks.push_back(r);
    }
  }
  if (!job.missing_ranks.empty()) {
    job.diagnostics.push_back(MissingRanks(job));
  }
  if (!byte_totals.empty()) {
    const MetricKind bytes_kind{"bytes", "job", std::string(kBytesMethod)};
    JobBytes bytes;
    TS_ASSIGN_OR_RETURN(bytes.total,
                        AggregateMetrics(byte_totals, bytes_kind, "job bytes"));
    if ((ranks_without_bytes || !job.missing_ranks.empty()) &&
        bytes.total.is_complete()) {
      bytes.total = MetricResult::Partial(*bytes.total.value(), bytes_kind);
    }
    bytes.per_rank = std::move(bytes_per_rank);
    job.bytes = std::move(bytes);
  }
  if (any_upper_bound) {
    TS_RETURN_IF_ERROR(MergeUpperBounds(ranks, upper_bounds, job));
  }
  // The ranks' method (kOperatorFlopsMethod, or kElementwiseFlopsMethod when
  // every rank opted into the elementwise convention).
  const MetricKind kind{"FLOPs", "job", first.flops.method};
  TS_ASSIGN_OR_RETURN(job.total, AggregateMetrics(totals, kind, "job FLOPs"));
  if (!job.missing_ranks.empty() && job.total.is_complete()) {
    job.total = MetricResult::Partial(*job.total.value(), kind);
  }
  return job;
}

absl::StatusOr<JobReport> MergeRankReports(absl::Span<const RankReport> ranks) {
  return MergeRankReportsNamed(ranks, {});
}

absl::StatusOr<JobReport> MergeRankReportsJson(
    absl::Span<const Json> reports, absl::Span<const std::string> names) {
  std::vector<RankReport> ranks;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    TS_ASSIGN_OR_RETURN(RankReport rank,
                        RankReportFromJson(reports[i], ReportName(names, i)));
    ranks.push_back(std::move(rank));
  }
  return MergeRankReportsNamed(ranks, names);
}

namespace {

// The known FLOPs of the ranks present: least, greatest and sum.
struct RankSpread {
  std::optional<Count> low;
  std::optional<Count> high;
  Count sum = 0;
};

RankSpread SpreadOf(const JobReport& report) {
  RankSpread spread;
  for (const auto& [rank, result] : report.per_rank) {
    const Count known = KnownFlops(result);
    spread.low = spread.low ? std::min(*spread.low, known) : known;
    spread.high = spread.high ? std::max(*spread.high, known) : known;
    spread.sum += known;
  }
  return spread;
}

}  // namespace

Json JobReport::RankMinJson(const JobReport& report) {
  const RankSpread spread = SpreadOf(report);
  return spread.low ? CountToJson(*spread.low) : Json();
}

Json JobReport::RankMaxJson(const JobReport& report) {
  const RankSpread spread = SpreadOf(report);
  return spread.high ? CountToJson(*spread.high) : Json();
}

Json JobReport::ImbalanceJson(const JobReport& report) {
  // max / mean of the ranks present: 1.0 is perfectly balanced.
  const RankSpread spread = SpreadOf(report);
  if (spread.sum <= 0 || !spread.high) return Json();
  return Json(static_cast<double>(*spread.high) * report.per_rank.size() /
              static_cast<double>(spread.sum));
}

absl::Span<const std::pair<JobReportKind, absl::string_view>> EnumNames(
    JobReportKind) {
  static constexpr std::pair<JobReportKind, absl::string_view> kNames[] = {
      {JobReportKind::kJobReport, "job_report"}};
  return kNames;
}

Json ProcessGroupsByNameCodec::Write(
    const std::map<std::string, ProcessGroupLayout>& groups) {
  Json array = Json::array();
  for (const auto& [name, group] : groups) array.push_back(ToJson(group));
  return array;
}

absl::StatusOr<std::map<std::string, ProcessGroupLayout>>
ProcessGroupsByNameCodec::Read(const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(const std::vector<ProcessGroupLayout> list,
                      FromJson<std::vector<ProcessGroupLayout>>(node));
  std::map<std::string, ProcessGroupLayout> groups;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!groups.emplace(list[i].name, list[i]).second) {
      return FieldError(
          MemberPath(absl::StrCat(node.path(), "[", i, "]"), "name"),
          absl::StrCat("names the process group '", list[i].name, "' again"));
    }
  }
  return groups;
}

Json JobReportToJson(const JobReport& report) { return ToJson(report); }

absl::StatusOr<JobReport> JobReportFromJson(const Json& node,
                                            absl::string_view field) {
  return FromJson<JobReport>(JsonValue(node, std::string(field)));
}

}  // namespace torchscan::report
