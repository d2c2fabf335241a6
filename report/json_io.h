// JSON text in and out, with exact integers of any Count size.
//
// nlohmann/json holds at most 64-bit integers. Integers beyond that are kept
// in the document as a binary node with subtype kBigIntegerSubtype holding
// their decimal digits; JSON text never contains binary nodes, so the marker
// is unambiguous. DumpJson writes them back as plain integer literals, which
// Python's json module (and this parser) read exactly.

#ifndef TORCHSCAN_REPORT_JSON_IO_H_
#define TORCHSCAN_REPORT_JSON_IO_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "report/count.h"

namespace torchscan::report {

// Reports keep their keys in insertion order, as Python's dicts do.
using Json = nlohmann::ordered_json;

inline constexpr std::uint64_t kBigIntegerSubtype = 0x49;  // 'I'

// The JSON node for an exact integer.
Json CountToJson(Count value);
// True for integer nodes, including big ones.
bool IsJsonInteger(const Json& node);
// The exact value of an integer node; `field` names it in the error.
absl::StatusOr<Count> JsonToCount(const Json& node, absl::string_view field);

// Serializes `document`; indent < 0 gives the compact form.
std::string DumpJson(const Json& document, int indent = -1);
// Arrays and objects nested deeper than this are rejected by ParseJson.
inline constexpr std::size_t kMaxJsonDepth = 512;

// Parses JSON text. Duplicate object keys, trailing garbage, non-finite
// numbers and nesting beyond kMaxJsonDepth are errors that say where the
// problem is.
absl::StatusOr<Json> ParseJson(absl::string_view text);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_JSON_IO_H_
