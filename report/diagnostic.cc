#include "report/diagnostic.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "report/json_reader.h"

namespace torchscan::report {

Diagnostic Diagnostic::ForPath(std::string code, std::string metric,
                               std::string path, std::string message) {
  return Diagnostic{std::move(code),   "warning",
                    std::move(metric), DiagnosticSubject::kPath,
                    std::move(path),   std::move(message)};
}

Diagnostic Diagnostic::ForOperator(std::string code, std::string metric,
                                   std::string op, std::string message) {
  return Diagnostic{std::move(code),   "warning",
                    std::move(metric), DiagnosticSubject::kOperator,
                    std::move(op),     std::move(message)};
}

Json DiagnosticToJson(const Diagnostic& diagnostic) {
  Json node = Json::object();
  node["code"] = diagnostic.code;
  node["severity"] = diagnostic.severity;
  node["metric"] = diagnostic.metric;
  node[diagnostic.subject_kind == DiagnosticSubject::kPath ? "path"
                                                           : "operator"] =
      diagnostic.subject;
  node["message"] = diagnostic.message;
  return node;
}

absl::StatusOr<Diagnostic> DiagnosticFromJson(const Json& node,
                                              absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject object,
                      JsonValue(node, std::string(field)).Object());
  Diagnostic diagnostic;
  TS_ASSIGN_OR_RETURN(diagnostic.code, object.String("code"));
  TS_ASSIGN_OR_RETURN(diagnostic.severity, object.String("severity"));
  TS_ASSIGN_OR_RETURN(diagnostic.metric, object.String("metric"));
  TS_ASSIGN_OR_RETURN(diagnostic.message, object.String("message"));
  if (diagnostic.severity != "warning" && diagnostic.severity != "error") {
    return FieldError(object.PathOf("severity"),
                      absl::StrCat("must be 'warning' or 'error', got '",
                                   diagnostic.severity, "'"));
  }
  const bool has_path = object.Contains("path");
  if (has_path == object.Contains("operator")) {
    return object.Error("needs exactly one of 'path' and 'operator'");
  }
  diagnostic.subject_kind =
      has_path ? DiagnosticSubject::kPath : DiagnosticSubject::kOperator;
  TS_ASSIGN_OR_RETURN(diagnostic.subject,
                      object.String(has_path ? "path" : "operator"));
  return diagnostic;
}

}  // namespace torchscan::report
