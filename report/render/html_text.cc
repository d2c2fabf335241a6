#include "report/render/html_text.h"

#include <variant>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "report/python_text.h"
#include "report/summary.h"

namespace torchscan::report::render {

std::string EscapeHtml(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string JsonForScript(const Json& document) {
  const std::string json = DumpJson(document);
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string GroupedCount(Count value) { return PythonThousands(value); }

std::string ScaledCount(Count value, absl::string_view unit) {
  const ScaledValue scaled = UnitScale(CountToDouble(value));
  if (scaled.prefix.empty()) {
    return absl::StrCat(CountToString(value), " ", unit);
  }
  // A prefix joins a symbol (kFLOPs, MB) but not a word (k parameters).
  const bool word = !unit.empty() && absl::c_all_of(unit, absl::ascii_islower);
  return absl::StrCat(PythonFixed(scaled.value, 2), " ", scaled.prefix,
                      word ? " " : "", unit);
}

std::string MetricText(const MetricResult& result) {
  if (!result.known_value()) return "n/a";
  const MetricValue& value = *result.known_value();
  std::string text;
  if (const Count* count = std::get_if<Count>(&value)) {
    text = GroupedCount(*count);
  } else if (const double* number = std::get_if<double>(&value)) {
    text = PythonFloatRepr(*number);
  } else {
    text = std::get<std::string>(value);
  }
  return result.is_complete() ? text : absl::StrCat("\u2265 ", text);
}

std::string PercentText(Count part, Count whole) {
  if (whole == 0) return "";
  return absl::StrCat(
      PythonFixed(100.0 * CountToDouble(part) / CountToDouble(whole), 1), "%");
}

}  // namespace torchscan::report::render
