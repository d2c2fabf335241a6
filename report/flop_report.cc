#include "report/flop_report.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "report/field_table.h"
#include "report/json_reader.h"
#include "report/metric_map.h"

namespace torchscan::report {
namespace {

// The precision split of `op`'s FLOPs: its slots, and whatever of op.flops
// they do not account for as "unknown"; nonzero entries only.
absl::StatusOr<std::map<std::string, Count>> OperatorPrecisions(
    const OperatorObservation& op) {
  std::map<std::string, Count> precisions;
  Count attributed = 0;
  for (int i = 0; i < kPrecisionCount; ++i) {
    const Count flops = op.flops_by_precision[i];
    if (flops == 0) continue;
    TS_RETURN_IF_ERROR(AddCount(attributed, flops, "FLOPs by precision"));
    precisions.emplace(PrecisionName(static_cast<Precision>(i)), flops);
  }
  if (attributed > op.flops) {
    return absl::InternalError(absl::StrCat(
        op.name, ": FLOPs by precision (", CountToString(attributed),
        ") exceed its FLOPs (", CountToString(op.flops), ")"));
  }
  if (attributed < op.flops) {
    TS_RETURN_IF_ERROR(
        AddCount(precisions[std::string(PrecisionName(Precision::kUnknown))],
                 op.flops - attributed, "FLOPs by precision"));
  }
  return precisions;
}

// Adds the precision split of `op`'s FLOPs to the report's by_precision and
// records it as the operator's by_operator_precision.
absl::Status AddPrecisions(const OperatorObservation& op, FlopReport& report) {
  std::map<std::string, Count> precisions;
  TS_ASSIGN_OR_RETURN(precisions, OperatorPrecisions(op));
  if (precisions.empty()) return absl::OkStatus();
  for (const auto& [precision, flops] : precisions) {
    TS_RETURN_IF_ERROR(
        AddCount(report.by_precision[precision], flops, "FLOPs by precision"));
  }
  std::map<std::string, Count>& into = report.by_operator_precision[op.name];
  for (const auto& [precision, flops] : precisions) {
    TS_RETURN_IF_ERROR(AddCount(into[precision], flops, "FLOPs by precision"));
  }
  return absl::OkStatus();
}

// "<path>: unknown precision 'fp4' (...)" unless `name` is a precision.
absl::Status CheckPrecisionName(absl::string_view name,
                                absl::string_view path) {
  if (PrecisionFromName(name)) return absl::OkStatus();
  return FieldError(path, absl::StrCat("unknown precision '", name,
                                       "' (fp64, fp32, tf32, bf16, fp16, fp8, "
                                       "int8 or unknown)"));
}

// The sum of `counts`, overflow-checked.
absl::StatusOr<Count> SumOf(const std::map<std::string, Count>& counts) {
  Count sum = 0;
  for (const auto& [name, count] : counts) {
    TS_RETURN_IF_ERROR(AddCount(sum, count, "FLOPs by precision"));
  }
  return sum;
}

// by_operator_precision as read (`path`): every operator it names is one of
// `by_operator`, whose FLOPs its split sums to; every operator of
// `by_operator` with nonzero FLOPs has a split; the splits sum to
// `by_precision`, precision by precision.
absl::Status CheckOperatorPrecisions(
    const std::map<std::string, std::map<std::string, Count>>& split,
    const std::map<std::string, Count>& by_operator,
    const std::map<std::string, Count>& by_precision, absl::string_view path) {
  std::map<std::string, Count> sums;
  for (const auto& [op, precisions] : split) {
    const std::string op_path = MemberPath(path, op);
    const auto flops = by_operator.find(op);
    if (flops == by_operator.end()) {
      return FieldError(op_path, "names no operator of by_operator");
    }
    TS_ASSIGN_OR_RETURN(const Count sum, SumOf(precisions));
    for (const auto& [name, count] : precisions) {
      TS_RETURN_IF_ERROR(AddCount(sums[name], count, "FLOPs by precision"));
    }
    if (sum != flops->second) {
      return FieldError(op_path, absl::StrCat("sums to ", CountToString(sum),
                                              ", not the operator's FLOPs ",
                                              CountToString(flops->second)));
    }
  }
  for (const auto& [op, flops] : by_operator) {
    if (flops != 0 && !split.count(op)) {
      return FieldError(path, absl::StrCat("has no split for ", op, " (",
                                           CountToString(flops), " FLOPs)"));
    }
  }
  std::erase_if(sums, [](const auto& entry) { return entry.second == 0; });
  if (sums != by_precision) {
    return FieldError(path,
                      "does not sum to by_precision, precision by precision");
  }
  return absl::OkStatus();
}

// The mask-aware member of a report whose executed total is `total`:
// `known` less what the masks excluded, complete when the total is and
// every mask was read.
absl::StatusOr<MaskAwareFlops> BuildMaskAware(
    const std::vector<OperatorObservation>& observations,
    const MetricResult& total, Count known,
    const std::map<std::string, Count>& by_module,
    const std::map<std::string, Count>& excluded_by_module) {
  MaskAwareFlops mask_aware;
  Count excluded = 0;
  for (const OperatorObservation& op : observations) {
    TS_RETURN_IF_ERROR(AddCount(excluded, op.mask_excluded_flops, op.name));
    if (op.mask_unread_calls > 0) {
      mask_aware.diagnostics.push_back(Diagnostic::ForOperator(
          std::string(kMaskNotRead), "mask_aware", op.name,
          absl::StrCat(
              op.name, " ran ", CountToString(op.mask_unread_calls),
              " time(s) with a mask whose allowed (query, key) pairs are not "
              "known (",
              op.mask_unread_message,
              "); their FLOPs are left out of the mask-aware count")));
    }
  }
  // NOTE [Exclusions beyond the count]
  // A call whose mask is not read excludes what it may have run (SDPA's math
  // decomposition: its backward too, which may never run), so an exclusion
  // can exceed what was counted; the count then stops at zero, still a
  // lower bound.
  excluded = std::min(excluded, known);
  const bool complete = total.is_complete() && mask_aware.diagnostics.empty();
  mask_aware.total =
      complete ? MetricResult::Complete(known - excluded, MaskAwareFlopsKind())
               : MetricResult::Partial(known - excluded, MaskAwareFlopsKind());
  for (const auto& [label, flops] : by_module) {
    const auto it = excluded_by_module.find(label);
    const Count less = it == excluded_by_module.end() ? 0 : it->second;
    mask_aware.by_module[label] = flops - std::min(less, flops);
  }
  return mask_aware;
}

// One compiled graph's diagnostic: its name, its runs and both bounds.
Diagnostic CompiledRegionDiagnostic(const CompiledRegionBytes& region) {
  std::string lower = absl::StrCat(
      "its own inputs read and outputs written move ",
      CountToString(region.inputs_read + region.outputs_written),
      " bytes (the lower bound, counted under ", kCompiledGraphOperator, ")");
  if (region.unknown_values > 0) {
    absl::StrAppend(&lower, ", leaving out ",
                    CountToString(region.unknown_values),
                    " input(s) or output(s) of unknown size");
  }
  std::string upper =
      absl::StrCat("the unfused sum of its operator calls is ",
                   CountToString(region.unfused),
                   " bytes (the upper bound, in bytes.upper_bound)");
  if (region.unfused_unknown_calls > 0) {
    absl::StrAppend(&upper, ", leaving out ",
                    CountToString(region.unfused_unknown_calls),
                    " call(s) whose bytes are not known (",
                    region.unfused_unknown_message, ")");
  }
  return Diagnostic::ForOperator(
      std::string(kCompiledRegionBytes), "bytes",
      std::string(kCompiledGraphOperator),
      absl::StrCat(region.name, " ran ", CountToString(region.runs),
                   " time(s): its fused kernels' bytes are not known; ", lower,
                   "; ", upper));
}

// The bytes member: the observations' bytes summed, complete when every
// call's bytes were known and no compiled graph ran; with compiled graphs,
// their diagnostics and the upper bound.
absl::StatusOr<BytesMoved> BuildBytes(
    const std::vector<OperatorObservation>& observations,
    std::map<std::string, Count> by_module,
    const std::vector<CompiledRegionBytes>& compiled_regions) {
  BytesMoved bytes;
  bytes.by_module = std::move(by_module);
  for (const OperatorObservation& op : observations) {
    if (op.bytes_read > 0 || op.bytes_written > 0) {
      bytes.by_operator[op.name] =
          OperatorBytes{op.bytes_read, op.bytes_written};
      TS_RETURN_IF_ERROR(AddCount(bytes.read, op.bytes_read, "bytes read"));
      TS_RETURN_IF_ERROR(
          AddCount(bytes.written, op.bytes_written, "bytes written"));
    }
    if (op.bytes_unknown_calls > 0) {
      bytes.diagnostics.push_back(Diagnostic::ForOperator(
          std::string(kBytesNotKnown), "bytes", op.name,
          absl::StrCat(op.name, " ran ", CountToString(op.bytes_unknown_calls),
                       " time(s) with bytes that are not known (",
                       op.bytes_unknown_message,
                       "); they are left out of the bytes moved")));
    }
  }
  const bool eager_complete = bytes.diagnostics.empty();
  Count known = 0;
  TS_RETURN_IF_ERROR(AddCount(known, bytes.read, "bytes moved"));
  TS_RETURN_IF_ERROR(AddCount(known, bytes.written, "bytes moved"));
  bytes.total = bytes.diagnostics.empty() && compiled_regions.empty()
                    ? MetricResult::Complete(known, BytesMovedKind())
                    : MetricResult::Partial(known, BytesMovedKind());
  if (compiled_regions.empty()) return bytes;
  // NOTE [The upper bound of the whole]
  // The known bytes hold the eager calls' and every graph's lower bound;
  // the upper bound replaces each lower bound by its graph's unfused sum.
  Count lower = 0;
  Count unfused = 0;
  bool upper_complete = eager_complete;
  for (const CompiledRegionBytes& region : compiled_regions) {
    TS_RETURN_IF_ERROR(AddCount(lower, region.inputs_read, "lower bound"));
    TS_RETURN_IF_ERROR(AddCount(lower, region.outputs_written, "lower bound"));
    TS_RETURN_IF_ERROR(AddCount(unfused, region.unfused, "upper bound"));
    upper_complete &= region.unfused_unknown_calls == 0;
    bytes.diagnostics.push_back(CompiledRegionDiagnostic(region));
  }
  Count upper = known - std::min(lower, known);
  TS_RETURN_IF_ERROR(AddCount(upper, unfused, "upper bound"));
  bytes.upper_bound = upper_complete
                          ? MetricResult::Complete(upper, UnfusedBytesKind())
                          : MetricResult::Partial(upper, UnfusedBytesKind());
  return bytes;
}

}  // namespace

absl::Status MaskAwareFlops::Validate(absl::string_view path) const {
  return ValidateMetricValue("mask_aware", total, path);
}

absl::Status BytesMoved::Validate(absl::string_view path) const {
  TS_RETURN_IF_ERROR(ValidateMetricValue("bytes", total, path));
  const std::optional<MetricValue>& known = total.known_value();
  if (known && std::holds_alternative<Count>(*known) &&
      std::get<Count>(*known) != read + written) {
    return FieldError(
        path, absl::StrCat("read + written (", CountToString(read + written),
                           ") is not the known value ",
                           CountToString(std::get<Count>(*known))));
  }
  if (upper_bound) {
    TS_RETURN_IF_ERROR(ValidateMetricValue("bytes upper bound", *upper_bound,
                                           absl::StrCat(path, ".upper_bound")));
  }
  return absl::OkStatus();
}

MetricKind BytesMovedKind() {
  return MetricKind{"bytes", "workload", std::string(kBytesMethod)};
}

MetricKind UnfusedBytesKind() {
  return MetricKind{"bytes", "workload", std::string(kUnfusedBytesMethod)};
}

absl::Status AddCompiledRegion(CompiledRegionBytes& into,
                               const CompiledRegionBytes& from) {
  TS_RETURN_IF_ERROR(AddCount(into.runs, from.runs, into.name));
  TS_RETURN_IF_ERROR(AddCount(into.inputs_read, from.inputs_read, into.name));
  TS_RETURN_IF_ERROR(
      AddCount(into.outputs_written, from.outputs_written, into.name));
  TS_RETURN_IF_ERROR(
      AddCount(into.unknown_values, from.unknown_values, into.name));
  TS_RETURN_IF_ERROR(AddCount(into.unfused, from.unfused, into.name));
  if (into.unfused_unknown_calls == 0 && from.unfused_unknown_calls > 0) {
    into.unfused_unknown_message = from.unfused_unknown_message;
  }
  return AddCount(into.unfused_unknown_calls, from.unfused_unknown_calls,
                  into.name);
}

void MarkBytesPartial(FlopReport& report, std::string message) {
  if (!report.bytes) return;
  MetricResult& total = report.bytes->total;
  total = MetricResult::Partial(*total.known_value(), BytesMovedKind());
  if (std::optional<MetricResult>& upper = report.bytes->upper_bound) {
    upper = MetricResult::Partial(*upper->known_value(), UnfusedBytesKind());
  }
  report.bytes->diagnostics.push_back(
      Diagnostic{.code = std::string(kBytesNotKnown),
                 .metric = "bytes",
                 .message = std::move(message)});
}

MetricKind OperatorFlopsKind() {
  return MetricKind{"FLOPs", "workload", std::string(kOperatorFlopsMethod)};
}

MetricKind MaskAwareFlopsKind() {
  return MetricKind{"FLOPs", "workload", std::string(kMaskAwareFlopsMethod)};
}

void MarkMaskAwarePartial(FlopReport& report) {
  if (!report.mask_aware) return;
  MetricResult& total = report.mask_aware->total;
  total = MetricResult::Partial(*total.known_value(), total.kind());
}

namespace {

// `result` with its kind's method replaced by `method`.
MetricResult WithMethod(const MetricResult& result, absl::string_view method) {
  MetricKind kind = result.kind();
  kind.method = std::string(method);
  switch (result.status()) {
    case MetricStatus::kComplete:
      return MetricResult::Complete(*result.value(), std::move(kind));
    case MetricStatus::kPartial:
      return MetricResult::Partial(*result.known_value(), std::move(kind));
    case MetricStatus::kUnavailable:
      break;
  }
  return MetricResult::Unavailable(std::move(kind));
}

}  // namespace

void UseElementwiseMethod(FlopReport& report) {
  report.method = std::string(kElementwiseFlopsMethod);
  report.total = WithMethod(report.total, kElementwiseFlopsMethod);
  if (report.mask_aware) {
    report.mask_aware->total =
        WithMethod(report.mask_aware->total, kElementwiseMaskAwareFlopsMethod);
  }
}

absl::StatusOr<FlopReport> BuildFlopReport(
    std::string torch_version, std::vector<OperatorObservation> observations,
    std::map<std::string, Count> by_module,
    const std::map<std::string, Count>& mask_excluded_by_module,
    std::map<std::string, Count> bytes_by_module,
    const std::vector<CompiledRegionBytes>& compiled_regions) {
  std::sort(observations.begin(), observations.end(),
            [](const OperatorObservation& a, const OperatorObservation& b) {
              return a.name < b.name;
            });
  FlopReport report;
  report.torch_version = std::move(torch_version);
  report.by_module = std::move(by_module);
  Count known = 0;
  for (const OperatorObservation& op : observations) {
    if (op.counted_calls > 0) {
      report.by_operator[op.name] = op.flops;
      TS_RETURN_IF_ERROR(AddCount(known, op.flops, "total FLOPs"));
      TS_RETURN_IF_ERROR(AddPrecisions(op, report));
    }
    if (op.unseen_reason) {
      report.diagnostics.push_back(Diagnostic::ForOperator(
          std::string(kUnseenWork), "flops", op.name,
          absl::StrCat(
              op.name, " ran ", CountToString(op.calls),
              " time(s) without any operator call: ", *op.unseen_reason)));
    } else if (op.failed_calls > 0) {
      report.diagnostics.push_back(Diagnostic::ForOperator(
          std::string(kOperatorFormulaError), "flops", op.name,
          absl::StrCat(op.name, " was observed ", CountToString(op.calls),
                       " time(s), but its FLOP formula failed for ",
                       CountToString(op.failed_calls),
                       " of them: ", op.failure_message)));
    } else if (op.counted_calls == 0 && op.ignored_reason) {
      report.ignored_operators[op.name] =
          IgnoredOperator{op.calls, *op.ignored_reason};
    } else if (op.counted_calls == 0 && op.calls > 0) {
      // (calls == 0: a composite seen only for its mask, attention_masks.h)
      report.diagnostics.push_back(Diagnostic::ForOperator(
          std::string(kUncountedOperator), "flops", op.name,
          absl::StrCat(op.name, " was observed ", CountToString(op.calls),
                       " time(s), but no FLOP formula is registered.")));
    }
  }
  report.total = report.diagnostics.empty()
                     ? MetricResult::Complete(known, OperatorFlopsKind())
                     : MetricResult::Partial(known, OperatorFlopsKind());
  TS_ASSIGN_OR_RETURN(
      report.mask_aware,
      BuildMaskAware(observations, report.total, known, report.by_module,
                     mask_excluded_by_module));
  TS_ASSIGN_OR_RETURN(
      report.bytes,
      BuildBytes(observations, std::move(bytes_by_module), compiled_regions));
  return report;
}

Json PrecisionCountsCodec::Write(const std::map<std::string, Count>& counts) {
  return MapOf<NonNegativeCountCodec>::Write(counts);
}

absl::StatusOr<std::map<std::string, Count>> PrecisionCountsCodec::Read(
    const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
  std::map<std::string, Count> counts;
  for (const auto& [name, value] : object.Members()) {
    TS_RETURN_IF_ERROR(CheckPrecisionName(name, value.path()));
    TS_ASSIGN_OR_RETURN(counts[name], value.NonNegativeCount());
  }
  return counts;
}

// NOTE [Absent and empty by_operator_precision]
// A report written before by_operator_precision existed has none, and its
// operators are then not checked against it; one that writes it, even
// empty, must split every operator with nonzero FLOPs. The table reads both
// as an empty map, so the check asks the document which it was.
absl::Status FlopReport::Validate(const JsonObject& object) const {
  TS_RETURN_IF_ERROR(
      ValidateMetricValue("total", total, object.PathOf("total")));
  const std::optional<MetricValue>& known = total.known_value();
  const Count known_flops = known && std::holds_alternative<Count>(*known)
                                ? std::get<Count>(*known)
                                : Count(0);
  TS_ASSIGN_OR_RETURN(const Count precision_sum, SumOf(by_precision));
  if (!by_precision.empty() && precision_sum != known_flops) {
    return FieldError(object.PathOf("by_precision"),
                      absl::StrCat("sums to ", CountToString(precision_sum),
                                   ", not the total's known value ",
                                   CountToString(known_flops)));
  }
  if (!object.Contains("by_operator_precision")) return absl::OkStatus();
  return CheckOperatorPrecisions(by_operator_precision, by_operator,
                                 by_precision,
                                 object.PathOf("by_operator_precision"));
}

Json FlopReportToJson(const FlopReport& report) { return ToJson(report); }

absl::StatusOr<FlopReport> FlopReportFromJson(const Json& node,
                                              absl::string_view field) {
  return FromJson<FlopReport>(JsonValue(node, std::string(field)));
}

}  // namespace torchscan::report
