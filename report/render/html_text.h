// Text for an HTML page: escaping for element content, attributes and
// embedded JSON, and the number formats the report page shows.

#ifndef TORCHSCAN_REPORT_RENDER_HTML_TEXT_H_
#define TORCHSCAN_REPORT_RENDER_HTML_TEXT_H_

#include <string>

#include "absl/strings/string_view.h"
#include "report/count.h"
#include "report/json_io.h"
#include "report/metric_result.h"

namespace torchscan::report::render {

// & < > " ' as character references: safe in element content and in quoted
// attribute values.
std::string EscapeHtml(absl::string_view text);

// `document` as compact JSON for a <script type="application/json"> block:
// '<', '>' and '&' are written as \u003c, \u003e and \u0026 (they only occur
// inside JSON strings, where those escapes mean the same), so no "</script>"
// or "<!--" in a module name can end or alter the block.
std::string JsonForScript(const Json& document);

// 1234567 -> "1,234,567".
std::string GroupedCount(Count value);

// "3.64 GFLOPs", "1.56 k parameters", "512 B": the summary table's scaling
// (1e3 steps, two decimals) and the unit, which a prefix joins unless it is
// a lower-case word.
std::string ScaledCount(Count value, absl::string_view unit);

// A metric as a reader should see it: "1,234" when complete, "≥ 1,234" when
// partial (a lower bound), "n/a" when unavailable. Floats are Python's repr,
// strings as they are.
std::string MetricText(const MetricResult& result);

// 12.5 -> "12.5%" (one decimal) of `part` in `whole`; "" when whole is 0.
std::string PercentText(Count part, Count whole);

}  // namespace torchscan::report::render

#endif  // TORCHSCAN_REPORT_RENDER_HTML_TEXT_H_
