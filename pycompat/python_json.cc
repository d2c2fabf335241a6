#include "pycompat/python_json.h"

#include <cmath>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pycompat/python_text.h"
#include "pycompat/utf8.h"

namespace torchscan::pycompat {

using report::Count;
using report::Json;
namespace {

void AppendEscapedUnit(unsigned unit, std::string& out) {
  absl::StrAppend(&out, absl::StrFormat("\\u%04x", unit));
}

// json.dumps with ensure_ascii=True: everything outside printable ASCII is a
// \u escape (astral code points as surrogate pairs).
void AppendString(absl::string_view text, std::string& out) {
  out.push_back('"');
  for (std::size_t i = 0; i < text.size();) {
    const DecodedCodePoint decoded = DecodeUtf8(text, i);
    i += decoded.length;
    const char32_t c = decoded.value;
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c >= 0x20 && c < 0x7F) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x10000) {
      AppendEscapedUnit(static_cast<unsigned>(c), out);
    } else {
      const char32_t offset = c - 0x10000;
      AppendEscapedUnit(0xD800 + static_cast<unsigned>(offset >> 10), out);
      AppendEscapedUnit(0xDC00 + static_cast<unsigned>(offset & 0x3FF), out);
    }
  }
  out.push_back('"');
}

void AppendFloat(double value, std::string& out) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "Infinity" : "-Infinity";
  } else {
    out += PythonFloatRepr(value);
  }
}

void Dump(const Json& node, int indent, int depth, std::string& out) {
  const bool pretty = indent >= 0;
  const auto newline = [&](int level) {
    out.push_back('\n');
    out.append(static_cast<std::size_t>(indent) * level, ' ');
  };
  if (report::IsJsonInteger(node)) {
    absl::StatusOr<Count> value = report::JsonToCount(node, "");
    out += value.ok() ? report::CountToString(*value) : node.dump();
    return;
  }
  switch (node.type()) {
    case Json::value_t::object: {
      if (node.empty()) {
        out += "{}";
        return;
      }
      out.push_back('{');
      bool first = true;
      for (const auto& [key, value] : node.items()) {
        if (!first) out += pretty ? "," : ", ";
        first = false;
        if (pretty) newline(depth + 1);
        AppendString(key, out);
        out += ": ";
        Dump(value, indent, depth + 1, out);
      }
      if (pretty) newline(depth);
      out.push_back('}');
      return;
    }
    case Json::value_t::array: {
      if (node.empty()) {
        out += "[]";
        return;
      }
      out.push_back('[');
      bool first = true;
      for (const Json& item : node) {
        if (!first) out += pretty ? "," : ", ";
        first = false;
        if (pretty) newline(depth + 1);
        Dump(item, indent, depth + 1, out);
      }
      if (pretty) newline(depth);
      out.push_back(']');
      return;
    }
    case Json::value_t::string:
      AppendString(node.get_ref<const std::string&>(), out);
      return;
    case Json::value_t::number_float:
      AppendFloat(node.get<double>(), out);
      return;
    case Json::value_t::boolean:
      out += node.get<bool>() ? "true" : "false";
      return;
    case Json::value_t::null:
      out += "null";
      return;
    default:
      // Binary nodes other than big integers never come from JSON text.
      out += node.dump();
      return;
  }
}

}  // namespace

std::string DumpPythonJson(const Json& document, int indent) {
  std::string out;
  Dump(document, indent, 0, out);
  return out;
}

}  // namespace torchscan::pycompat
