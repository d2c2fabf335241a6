// JSON text in and out, with exact integers of any Count size.
//
// nlohmann/json holds at most 64-bit integers. Integers beyond that are kept
// in the document as a binary node with subtype kBigIntegerSubtype holding
// their decimal digits; JSON text never contains binary nodes, so the marker
// is unambiguous. DumpJson writes them back as plain integer literals, which
// Python's json module (and this parser) read exactly.
//
// One writer, two styles (JsonStyle). The native style is nlohmann's compact
// form. The Python style is the bytes Python's json.dumps writes: TorchScan
// 0.2 users store reports with json.dumps(report), and a report we parse and
// write back with DumpPythonJson is identical to the file Python produced.
// The styles differ in exactly these points (report/json_style_test.cc pins
// each one):
//
//   separators   on one line, native `{"a":1,"b":[1,2]}`, Python
//                `{"a": 1, "b": [1, 2]}`; indented, both end items with ","
//                and keys with ": "
//   floats       native: nlohmann's shortest digits, exponent from 1e15
//                (`1e+15`); Python: float repr (`1000000000000000.0`). Both
//                write `1.0`, `1e-05`, `1e+16`, `-0.0`.
//   non-finite   native `null`; Python `Infinity`, `-Infinity`, `NaN`
//   non-ASCII    native: UTF-8 as is; Python: \u escapes (lowercase hex,
//                surrogate pairs beyond U+FFFF), DEL included (\u007f)
//   bad UTF-8    native: throws nlohmann::json::type_error; Python: \ufffd
//
// Both keep insertion order, write integers of any size exactly, indent with
// spaces, write empty containers as {} and [], and escape '"', '\\' and the
// controls below U+0020 alike (\b \f \n \r \t, else \u00XX).

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

// How DumpJson spells a document.
struct JsonStyle {
  // Spaces per nesting level, each item and key on its own line; < 0 writes
  // the document on one line.
  int indent = -1;
  // Written after every item but the last of an array or object (before the
  // line break when indented), and between a key and its value.
  absl::string_view item_separator = ",";
  absl::string_view key_separator = ":";
  // Floats as Python's float repr, non-finite ones as Infinity, -Infinity and
  // NaN; otherwise nlohmann's shortest form, non-finite ones as null.
  bool python_floats = false;
  // Every code point outside printable ASCII as a \u escape, malformed UTF-8
  // as \ufffd (json.dumps' ensure_ascii); otherwise text is written as UTF-8
  // and malformed UTF-8 throws nlohmann::json::type_error.
  bool ensure_ascii = false;
};

// nlohmann's own form: Json::dump(indent).
JsonStyle NativeJsonStyle(int indent = -1);
// json.dumps(document) for indent < 0, json.dumps(document, indent=indent)
// otherwise.
JsonStyle PythonJsonStyle(int indent = -1);

// Serializes `document` in `style`.
std::string DumpJson(const Json& document, const JsonStyle& style);
// DumpJson(document, NativeJsonStyle(indent)).
std::string DumpJson(const Json& document, int indent = -1);
// DumpJson(document, PythonJsonStyle(indent)): the bytes of json.dumps.
std::string DumpPythonJson(const Json& document, int indent = -1);
// Arrays and objects nested deeper than this are rejected by ParseJson.
inline constexpr std::size_t kMaxJsonDepth = 512;

// Parses JSON text. Duplicate object keys, trailing garbage, non-finite
// numbers and nesting beyond kMaxJsonDepth are errors that say where the
// problem is.
absl::StatusOr<Json> ParseJson(absl::string_view text);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_JSON_IO_H_
