#include "report/flop_report.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "report/metric_map.h"

namespace torchscan::report {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
}

absl::StatusOr<const Json*> Member(const Json& object, const char* key,
                                   absl::string_view field) {
  auto it = object.find(key);
  if (it == object.end()) {
    return FieldError(absl::StrCat(field, ".", key), "is missing");
  }
  return &*it;
}

absl::StatusOr<Count> NonNegativeCount(const Json& node,
                                       absl::string_view field) {
  absl::StatusOr<Count> value = JsonToCount(node, field);
  if (!value.ok()) return value.status();
  if (*value < 0) {
    return FieldError(field, absl::StrCat("must not be negative, got ",
                                          CountToString(*value)));
  }
  return value;
}

absl::StatusOr<std::map<std::string, Count>> CountMapFromJson(
    const Json& node, absl::string_view field) {
  if (!node.is_object()) {
    return FieldError(
        field, absl::StrCat("expected an object, got ", node.type_name()));
  }
  std::map<std::string, Count> counts;
  for (const auto& [key, value] : node.items()) {
    absl::StatusOr<Count> count =
        NonNegativeCount(value, absl::StrCat(field, ".", key));
    if (!count.ok()) return count.status();
    counts.emplace(key, *count);
  }
  return counts;
}

Json CountMapToJson(const std::map<std::string, Count>& counts) {
  Json node = Json::object();
  for (const auto& [key, value] : counts) node[key] = CountToJson(value);
  return node;
}

absl::Status AddTo(Count& sum, Count value, absl::string_view what) {
  std::optional<Count> next = CheckedAdd(sum, value);
  if (!next) {
    return absl::OutOfRangeError(
        absl::StrCat(what, " overflows a 128-bit integer"));
  }
  sum = *next;
  return absl::OkStatus();
}

}  // namespace

MetricKind OperatorFlopsKind() {
  return MetricKind{"FLOPs", "workload", std::string(kOperatorFlopsMethod)};
}

absl::StatusOr<FlopReport> BuildFlopReport(
    std::string torch_version, std::vector<OperatorObservation> observations,
    std::map<std::string, Count> by_module) {
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
      if (absl::Status status = AddTo(known, op.flops, "total FLOPs");
          !status.ok()) {
        return status;
      }
    }
    if (op.unseen_reason) {
      report.diagnostics.push_back(Diagnostic::ForOperator(
          std::string(kUnseenWork), "flops", op.name,
          absl::StrCat(op.name, " ran ", CountToString(op.calls),
                       " time(s) without any operator call: ",
                       *op.unseen_reason)));
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
    } else if (op.counted_calls == 0) {
      report.diagnostics.push_back(Diagnostic::ForOperator(
          std::string(kUncountedOperator), "flops", op.name,
          absl::StrCat(op.name, " was observed ", CountToString(op.calls),
                       " time(s), but no FLOP formula is registered.")));
    }
  }
  report.total = report.diagnostics.empty()
                     ? MetricResult::Complete(known, OperatorFlopsKind())
                     : MetricResult::Partial(known, OperatorFlopsKind());
  return report;
}

Json FlopReportToJson(const FlopReport& report) {
  Json node = Json::object();
  node["schema_version"] = report.schema_version;
  node["context"] = Json::object();
  node["context"]["torch_version"] = report.torch_version;
  node["context"]["method"] = report.method;
  node["total"] = MetricResultToJson(report.total);
  node["by_module"] = CountMapToJson(report.by_module);
  node["by_operator"] = CountMapToJson(report.by_operator);
  Json ignored = Json::object();
  for (const auto& [name, entry] : report.ignored_operators) {
    ignored[name] = Json::object();
    ignored[name]["calls"] = CountToJson(entry.calls);
    ignored[name]["reason"] = entry.reason;
  }
  node["ignored_operators"] = std::move(ignored);
  Json diagnostics = Json::array();
  for (const Diagnostic& diagnostic : report.diagnostics) {
    diagnostics.push_back(DiagnosticToJson(diagnostic));
  }
  node["diagnostics"] = std::move(diagnostics);
  return node;
}

absl::StatusOr<FlopReport> FlopReportFromJson(const Json& node,
                                              absl::string_view field) {
  if (!node.is_object()) {
    return FieldError(
        field, absl::StrCat("expected an object, got ", node.type_name()));
  }
  FlopReport report;
  absl::StatusOr<const Json*> version = Member(node, "schema_version", field);
  if (!version.ok()) return version.status();
  if (!(*version)->is_number_integer()) {
    return FieldError(absl::StrCat(field, ".schema_version"),
                      "expected an integer");
  }
  report.schema_version = (*version)->get<int>();
  if (report.schema_version != kSchemaVersion) {
    return FieldError(
        absl::StrCat(field, ".schema_version"),
        absl::StrCat("unsupported schema version: ", report.schema_version));
  }

  absl::StatusOr<const Json*> context = Member(node, "context", field);
  if (!context.ok()) return context.status();
  const std::string context_field = absl::StrCat(field, ".context");
  for (auto [key, target] : {std::pair{"torch_version", &report.torch_version},
                             std::pair{"method", &report.method}}) {
    absl::StatusOr<const Json*> value = Member(**context, key, context_field);
    if (!value.ok()) return value.status();
    if (!(*value)->is_string()) {
      return FieldError(absl::StrCat(context_field, ".", key),
                        "expected a string");
    }
    *target = (*value)->get<std::string>();
  }

  absl::StatusOr<const Json*> total = Member(node, "total", field);
  if (!total.ok()) return total.status();
  absl::StatusOr<MetricResult> total_result =
      MetricResultFromJson(**total, absl::StrCat(field, ".total"));
  if (!total_result.ok()) return total_result.status();
  report.total = *std::move(total_result);

  for (auto [key, target] : {std::pair{"by_module", &report.by_module},
                             std::pair{"by_operator", &report.by_operator}}) {
    absl::StatusOr<const Json*> value = Member(node, key, field);
    if (!value.ok()) return value.status();
    absl::StatusOr<std::map<std::string, Count>> counts =
        CountMapFromJson(**value, absl::StrCat(field, ".", key));
    if (!counts.ok()) return counts.status();
    *target = *std::move(counts);
  }

  absl::StatusOr<const Json*> ignored =
      Member(node, "ignored_operators", field);
  if (!ignored.ok()) return ignored.status();
  if (!(*ignored)->is_object()) {
    return FieldError(absl::StrCat(field, ".ignored_operators"),
                      "expected an object");
  }
  for (const auto& [name, entry] : (*ignored)->items()) {
    const std::string entry_field =
        absl::StrCat(field, ".ignored_operators.", name);
    if (!entry.is_object())
      return FieldError(entry_field, "expected an object");
    absl::StatusOr<const Json*> calls = Member(entry, "calls", entry_field);
    if (!calls.ok()) return calls.status();
    absl::StatusOr<Count> call_count =
        NonNegativeCount(**calls, absl::StrCat(entry_field, ".calls"));
    if (!call_count.ok()) return call_count.status();
    absl::StatusOr<const Json*> reason = Member(entry, "reason", entry_field);
    if (!reason.ok()) return reason.status();
    if (!(*reason)->is_string()) {
      return FieldError(absl::StrCat(entry_field, ".reason"),
                        "expected a string");
    }
    report.ignored_operators[name] =
        IgnoredOperator{*call_count, (*reason)->get<std::string>()};
  }

  absl::StatusOr<const Json*> diagnostics = Member(node, "diagnostics", field);
  if (!diagnostics.ok()) return diagnostics.status();
  if (!(*diagnostics)->is_array()) {
    return FieldError(absl::StrCat(field, ".diagnostics"), "expected an array");
  }
  for (std::size_t i = 0; i < (*diagnostics)->size(); ++i) {
    absl::StatusOr<Diagnostic> diagnostic = DiagnosticFromJson(
        (**diagnostics)[i], absl::StrCat(field, ".diagnostics[", i, "]"));
    if (!diagnostic.ok()) return diagnostic.status();
    report.diagnostics.push_back(*std::move(diagnostic));
  }
  // Checked last so that errors in the maps above keep being reported first.
  if (absl::Status status = ValidateMetricValue("total", report.total,
                                                absl::StrCat(field, ".total"));
      !status.ok()) {
    return status;
  }
  return report;
}

}  // namespace torchscan::report
