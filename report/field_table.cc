#include "report/field_table.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace torchscan::report {

absl::StatusOr<std::uint64_t> JsonCodec<std::uint64_t>::Read(
    const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(Count value, node.NonNegativeCount());
  if (value > std::numeric_limits<std::uint64_t>::max()) {
    return node.Error(
        absl::StrCat("is out of range, got ", CountToString(value)));
  }
  return static_cast<std::uint64_t>(value);
}

// NOTE [Non-finite floats in JSON]
// JSON has no infinities or NaN (ParseJson refuses Python's Infinity and
// NaN), yet a compiled graph holds masked_fill(mask, -inf) and
// clamp(max=inf). They are written as the strings "inf", "-inf" and "nan",
// as the compiled-graph pass writes them (_tally_pass.py, _graph_spec.py).
Json JsonCodec<double>::Write(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

absl::StatusOr<double> JsonCodec<double>::Read(const JsonValue& node) {
  if (node.node().is_number()) return node.Number();
  if (node.node().is_string()) {
    const auto& text = node.node().get_ref<const std::string&>();
    if (text == "inf") return std::numeric_limits<double>::infinity();
    if (text == "-inf") return -std::numeric_limits<double>::infinity();
    if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  return node.Expected("a number, \"inf\", \"-inf\" or \"nan\"");
}

absl::StatusOr<JsonNull> JsonCodec<JsonNull>::Read(const JsonValue& node) {
  if (!node.is_null()) return node.Expected("null");
  return JsonNull{};
}

absl::Status ExpectedOneOf(const JsonValue& node,
                           const std::vector<absl::string_view>& names) {
  std::string what;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) absl::StrAppend(&what, i + 1 == names.size() ? " or " : ", ");
    absl::StrAppend(&what, "\"", names[i], "\"");
  }
  return node.Expected(what);
}

absl::Status NeedsExactlyOneOf(const JsonObject& object,
                               const std::vector<absl::string_view>& keys) {
  std::string what;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i > 0) absl::StrAppend(&what, i + 1 == keys.size() ? " and " : ", ");
    absl::StrAppend(&what, "'", keys[i], "'");
  }
  return object.Error(absl::StrCat("needs exactly one of ", what));
}

}  // namespace torchscan::report
