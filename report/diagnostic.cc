#include "report/diagnostic.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "report/json_reader.h"

namespace torchscan::report {
namespace {

constexpr std::pair<DiagnosticSubject, absl::string_view> kSubjectKeys[] = {
    {DiagnosticSubject::kPath, "path"},
    {DiagnosticSubject::kOperator, "operator"}};

}  // namespace

absl::Span<const std::pair<DiagnosticSubject, absl::string_view>> EnumNames(
    DiagnosticSubject) {
  return kSubjectKeys;
}

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

absl::Status Diagnostic::Validate(absl::string_view path) const {
  if (severity != "warning" && severity != "error") {
    return FieldError(
        MemberPath(path, "severity"),
        absl::StrCat("must be 'warning' or 'error', got '", severity, "'"));
  }
  return absl::OkStatus();
}

}  // namespace torchscan::report
