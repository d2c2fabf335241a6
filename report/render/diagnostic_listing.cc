#include "report/render/diagnostic_listing.h"

#include <algorithm>
#include <cstddef>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace torchscan::report::render {
namespace {

std::string Noun(bool operators, bool paths, std::size_t count) {
  const char* noun = operators && !paths   ? "operator"
                     : paths && !operators ? "module"
                                           : "subject";
  return count == 1 ? noun : absl::StrCat(noun, "s");
}

}  // namespace

std::string SubjectText(const Diagnostic& diagnostic) {
  if (diagnostic.subject_kind == DiagnosticSubject::kPath &&
      diagnostic.subject.empty()) {
    return "<root>";
  }
  return diagnostic.subject;
}

std::vector<DiagnosticGroup> GroupDiagnostics(
    absl::Span<const Diagnostic> diagnostics) {
  std::vector<DiagnosticGroup> groups;
  for (const Diagnostic& diagnostic : diagnostics) {
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const DiagnosticGroup& candidate) {
                                return candidate.code == diagnostic.code;
                              });
    if (group == groups.end()) {
      groups.push_back(DiagnosticGroup{diagnostic.code});
      group = groups.end() - 1;
    }
    group->diagnostics.push_back(&diagnostic);
  }
  for (DiagnosticGroup& group : groups) {
    std::set<std::string> metrics, severities, seen;
    bool operators = false, paths = false;
    for (const Diagnostic* diagnostic : group.diagnostics) {
      if (!diagnostic->metric.empty()) metrics.insert(diagnostic->metric);
      severities.insert(diagnostic->severity);
      (diagnostic->subject_kind == DiagnosticSubject::kOperator ? operators
                                                                : paths) = true;
      std::string subject = SubjectText(*diagnostic);
      if (seen.insert(subject).second) {
        group.subjects.push_back(std::move(subject));
      }
    }
    group.metrics.assign(metrics.begin(), metrics.end());
    group.severities.assign(severities.begin(), severities.end());
    group.subject_noun = Noun(operators, paths, group.subjects.size());
  }
  return groups;
}

std::string ListDiagnostics(absl::Span<const Diagnostic> diagnostics,
                            int max_subjects) {
  if (diagnostics.empty()) return "";
  std::string out = absl::StrCat("Diagnostics: ", diagnostics.size(), "\n");
  for (const DiagnosticGroup& group : GroupDiagnostics(diagnostics)) {
    absl::StrAppend(&out, "  ", group.code, ": ", group.diagnostics.size(),
                    " on ", group.subjects.size(), " ", group.subject_noun);
    std::vector<std::string> details = group.metrics;
    if (group.severities != std::vector<std::string>{"warning"}) {
      details.push_back(
          absl::StrCat("severity ", absl::StrJoin(group.severities, ", ")));
    }
    if (!details.empty()) {
      absl::StrAppend(&out, " (", absl::StrJoin(details, ", "), ")");
    }
    const std::size_t shown =
        std::min(group.subjects.size(),
                 static_cast<std::size_t>(std::max(0, max_subjects)));
    std::vector<std::string> subjects(group.subjects.begin(),
                                      group.subjects.begin() + shown);
    if (shown < group.subjects.size()) {
      subjects.push_back(
          absl::StrCat("... and ", group.subjects.size() - shown, " more"));
    }
    absl::StrAppend(&out, "\n    ", absl::StrJoin(subjects, ", "), "\n",
                    "    e.g. ", group.diagnostics.front()->message, "\n");
  }
  return out;
}

std::string SummaryWithDiagnosticsListed(
    absl::string_view summary, absl::Span<const Diagnostic> diagnostics) {
  const std::string line = absl::StrCat("\nDiagnostics: ", diagnostics.size(),
                                        " (inspect report['diagnostics'])\n");
  const std::string listing = ListDiagnostics(diagnostics);
  const std::size_t at = summary.find(line);
  if (at == absl::string_view::npos) return absl::StrCat(summary, listing);
  return absl::StrCat(summary.substr(0, at + 1), listing,
                      summary.substr(at + line.size()));
}

}  // namespace torchscan::report::render
