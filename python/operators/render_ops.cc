// Operators through which Python renders reports for people: the HTML page,
// folded stacks and the diagnostics listing (report/render/). JSON in, text
// out; what is not a report, or a report that does not parse, is a
// ValueError naming the problem.

#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "python/operators/value_arguments.h"
#include "report/json_io.h"
#include "report/render/report_documents.h"
#include "torchscan_dispatch/own_operators.h"

namespace torchscan::dispatch {
namespace {

using report::Json;

// `before` / `after`: the reports a diff document was computed from.
std::string RenderHtml(std::string document, std::optional<std::string> before,
                       std::optional<std::string> after, std::string title) {
  const std::optional<Json> old_report = ParseOptionalJsonArgument(before);
  const std::optional<Json> new_report = ParseOptionalJsonArgument(after);
  absl::StatusOr<std::string> html = report::render::HtmlOfDocument(
      ParseJsonArgument(document), old_report ? &*old_report : nullptr,
      new_report ? &*new_report : nullptr, {std::move(title)});
  CheckValue(html.status());
  return *std::move(html);
}

// {"text": folded lines, "partial": bool, "notes": [str, ...]}
std::string FoldedStacks(std::string document,
                         std::optional<std::string> before,
                         std::optional<std::string> after) {
  const std::optional<Json> old_report = ParseOptionalJsonArgument(before);
  const std::optional<Json> new_report = ParseOptionalJsonArgument(after);
  absl::StatusOr<report::render::FoldedStacks> folded =
      report::render::FoldedOfDocument(ParseJsonArgument(document),
                                       old_report ? &*old_report : nullptr,
                                       new_report ? &*new_report : nullptr);
  CheckValue(folded.status());
  Json out = Json::object();
  out["text"] = folded->text;
  out["partial"] = folded->partial;
  out["notes"] = folded->notes;
  return report::DumpJson(out);
}

// The listing alone, or `summary` with its Python hint replaced by it.
std::string ListDiagnostics(std::string document, std::string summary) {
  absl::StatusOr<std::string> listing = report::render::DiagnosticsOfDocument(
      ParseJsonArgument(document), summary);
  CheckValue(listing.status());
  return *std::move(listing);
}

const OwnOperators registration(
    torch::Library::FRAGMENT,
    {"_render_html", "_folded_stacks", "_list_diagnostics"},
    [](torch::Library& library) {
      library.def(
          "_render_html(str document, str? before=None, str? after=None, "
          "str title='') -> str",
          &RenderHtml);
      library.def(
          "_folded_stacks(str document, str? before=None, str? after=None) "
          "-> str",
          &FoldedStacks);
      library.def("_list_diagnostics(str document, str summary='') -> str",
                  &ListDiagnostics);
    },
    __FILE__, __LINE__);

}  // namespace
}  // namespace torchscan::dispatch
