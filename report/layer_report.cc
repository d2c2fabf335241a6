#include "report/layer_report.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "report/json_reader.h"

namespace torchscan::report {

std::string LayerName(absl::string_view path,
                      absl::string_view root_class_name) {
  const std::size_t dot = path.rfind('.');
  const absl::string_view last =
      dot == absl::string_view::npos ? path : path.substr(dot + 1);
  // Python's str.lower() also lowers non-ASCII letters; class names are
  // ASCII in practice.
  return last.empty() ? absl::AsciiStrToLower(root_class_name)
                      : std::string(last);
}

std::int64_t LayerDepth(absl::string_view path) {
  if (path.empty()) return 0;
  return static_cast<std::int64_t>(std::count(path.begin(), path.end(), '.')) +
         1;
}

Json LayerReportToJson(const LayerReport& layer) { return ToJson(layer); }

absl::StatusOr<LayerReport> LayerReportFromJson(const Json& node,
                                                absl::string_view field) {
  return FromJson<LayerReport>(JsonValue(node, std::string(field)));
}

}  // namespace torchscan::report
