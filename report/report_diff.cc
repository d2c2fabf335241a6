#include "report/report_diff.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "report/json_reader.h"

namespace torchscan::report {
namespace {

MetricStatus ExpectedStatus(const MetricDiff& diff) {
  if (!diff.before || !diff.after) return MetricStatus::kUnavailable;
  const MetricStatus before = diff.before->status();
  const MetricStatus after = diff.after->status();
  if (before == MetricStatus::kUnavailable ||
      after == MetricStatus::kUnavailable) {
    return MetricStatus::kUnavailable;
  }
  if (before == MetricStatus::kPartial || after == MetricStatus::kPartial) {
    return MetricStatus::kPartial;
  }
  return MetricStatus::kComplete;
}

}  // namespace

Json DiffStatusCodec::Write(MetricStatus status) {
  return std::string(MetricStatusName(status));
}

absl::StatusOr<MetricStatus> DiffStatusCodec::Read(const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(std::string name, node.String());
  absl::StatusOr<MetricStatus> status = ParseMetricStatus(name);
  if (!status.ok()) return node.Error(status.status().message());
  return *status;
}

Json DeltaCodec::Write(const MetricValue& delta) { return ToJson(delta); }

absl::StatusOr<MetricValue> DeltaCodec::Read(const JsonValue& node) {
  if (IsJsonInteger(node.node())) {
    TS_ASSIGN_OR_RETURN(Count delta, node.Integer());
    return MetricValue(delta);
  }
  if (node.node().is_number_float()) {
    const double value = node.node().get<double>();
    if (!std::isfinite(value)) return node.Error("is not finite");
    return MetricValue(value);
  }
  return node.Error(absl::StrCat("expected a number or null, got ",
                                 DescribeJson(node.node())));
}

Json MetricDiffsCodec::Write(const std::map<std::string, MetricDiff>& diffs) {
  return ToJson(diffs);
}

absl::StatusOr<std::map<std::string, MetricDiff>> MetricDiffsCodec::Read(
    const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
  std::map<std::string, MetricDiff> diffs;
  for (auto& [name, entry] : object.Members()) {
    TS_ASSIGN_OR_RETURN(MetricDiff diff, FromJson<MetricDiff>(entry));
    // Check the sides against the rules for this metric's name.
    for (auto [key, side] :
         {std::pair{"before", &diff.before}, std::pair{"after", &diff.after}}) {
      if (!side->has_value()) continue;
      TS_RETURN_IF_ERROR(
          ValidateMetricValue(name, **side, MemberPath(entry.path(), key)));
    }
    diffs.emplace(name, std::move(diff));
  }
  return diffs;
}

absl::Status MetricDiff::Validate(absl::string_view path) const {
  const MetricStatus expected = ExpectedStatus(*this);
  if (status != expected) {
    return FieldError(MemberPath(path, "status"),
                      absl::StrCat("is '", MetricStatusName(status),
                                   "' but the sides make it '",
                                   MetricStatusName(expected), "'"));
  }
  if (delta.has_value() != (status == MetricStatus::kComplete)) {
    return FieldError(
        MemberPath(path, "delta"),
        delta ? "must be null unless complete" : "is required when complete");
  }
  return absl::OkStatus();
}

Json MetricDiffToJson(const MetricDiff& diff) { return ToJson(diff); }

absl::StatusOr<MetricDiff> MetricDiffFromJson(const Json& node,
                                              absl::string_view field) {
  return FromJson<MetricDiff>(JsonValue(node, std::string(field)));
}

Json ReportDiffToJson(const ReportDiff& diff) { return ToJson(diff); }

absl::StatusOr<ReportDiff> ReportDiffFromJson(const Json& node,
                                              absl::string_view field) {
  return FromJson<ReportDiff>(JsonValue(node, std::string(field)));
}

}  // namespace torchscan::report
