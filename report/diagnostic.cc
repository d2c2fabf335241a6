#include "report/diagnostic.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace torchscan::report {
namespace {

absl::StatusOr<std::string> RequiredString(const Json& node, const char* key,
                                           absl::string_view field) {
  auto it = node.find(key);
  if (it == node.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".", key, ": is missing"));
  }
  if (!it->is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".", key, ": expected a string, got ", it->type_name()));
  }
  return it->get<std::string>();
}

}  // namespace

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
  if (!node.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": expected a diagnostic object, got ", node.type_name()));
  }
  Diagnostic diagnostic;
  for (auto [key, target] : {std::pair{"code", &diagnostic.code},
                             std::pair{"severity", &diagnostic.severity},
                             std::pair{"metric", &diagnostic.metric},
                             std::pair{"message", &diagnostic.message}}) {
    absl::StatusOr<std::string> text = RequiredString(node, key, field);
    if (!text.ok()) return text.status();
    *target = *std::move(text);
  }
  if (diagnostic.severity != "warning" && diagnostic.severity != "error") {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".severity: must be 'warning' or 'error', got '",
                     diagnostic.severity, "'"));
  }
  const bool has_path = node.contains("path");
  const bool has_operator = node.contains("operator");
  if (has_path == has_operator) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": needs exactly one of 'path' and 'operator'"));
  }
  diagnostic.subject_kind =
      has_path ? DiagnosticSubject::kPath : DiagnosticSubject::kOperator;
  absl::StatusOr<std::string> subject =
      RequiredString(node, has_path ? "path" : "operator", field);
  if (!subject.ok()) return subject.status();
  diagnostic.subject = *std::move(subject);
  return diagnostic;
}

}  // namespace torchscan::report
