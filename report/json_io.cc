#include "report/json_io.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/python_text.h"
#include "report/utf8.h"

namespace torchscan::report {
namespace {

bool IsBigInteger(const Json& node) {
  return node.is_binary() && node.get_binary().has_subtype() &&
         node.get_binary().subtype() == kBigIntegerSubtype;
}

std::string BigIntegerDigits(const Json& node) {
  const auto& bytes = node.get_binary();
  return std::string(bytes.begin(), bytes.end());
}

Json MakeBigInteger(absl::string_view digits) {
  return Json::binary(std::vector<std::uint8_t>(digits.begin(), digits.end()),
                      kBigIntegerSubtype);
}

bool IsIntegerLiteral(absl::string_view text) {
  if (!text.empty() && text.front() == '-') text.remove_prefix(1);
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

void AppendEscapedUnit(unsigned unit, std::string& out) {
  absl::StrAppend(&out, absl::StrFormat("\\u%04x", unit));
}

// json.dumps with ensure_ascii=True: everything outside printable ASCII is a
// \u escape (astral code points as surrogate pairs), malformed UTF-8 is
// U+FFFD.
void AppendAsciiString(absl::string_view text, std::string& out) {
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

void AppendString(const std::string& text, const JsonStyle& style,
                  std::string& out) {
  if (style.ensure_ascii) {
    AppendAsciiString(text, out);
  } else {
    out += Json(text).dump();
  }
}

void AppendFloat(const Json& node, const JsonStyle& style, std::string& out) {
  if (!style.python_floats) {
    out += node.dump();
    return;
  }
  const double value = node.get<double>();
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "Infinity" : "-Infinity";
  } else {
    out += PythonFloatRepr(value);
  }
}

// The one tree walker of both styles.
void Dump(const Json& node, const JsonStyle& style, int depth,
          std::string& out) {
  const auto newline = [&](int level) {
    if (style.indent < 0) return;
    out.push_back('\n');
    out.append(static_cast<std::size_t>(style.indent) * level, ' ');
  };
  if (IsBigInteger(node)) {
    out += BigIntegerDigits(node);
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
        if (!first) absl::StrAppend(&out, style.item_separator);
        first = false;
        newline(depth + 1);
        AppendString(key, style, out);
        absl::StrAppend(&out, style.key_separator);
        Dump(value, style, depth + 1, out);
      }
      newline(depth);
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
        if (!first) absl::StrAppend(&out, style.item_separator);
        first = false;
        newline(depth + 1);
        Dump(item, style, depth + 1, out);
      }
      newline(depth);
      out.push_back(']');
      return;
    }
    case Json::value_t::string:
      AppendString(node.get_ref<const std::string&>(), style, out);
      return;
    case Json::value_t::number_float:
      AppendFloat(node, style, out);
      return;
    default:
      // Integers up to 64 bits, booleans, null; binary nodes other than big
      // integers never come from JSON text.
      out += node.dump();
      return;
  }
}

// Builds the document from SAX events so that integer literals beyond 64 bits
// keep their digits (the DOM parser would turn them into doubles).
class ExactDomBuilder : public nlohmann::json_sax<Json> {
 public:
  explicit ExactDomBuilder(Json& root) : root_(root) {}

  bool null() override { return Put(nullptr); }
  bool boolean(bool value) override { return Put(value); }
  bool number_integer(number_integer_t value) override { return Put(value); }
  bool number_unsigned(number_unsigned_t value) override { return Put(value); }
  bool number_float(number_float_t value, const string_t& lexeme) override {
    if (IsIntegerLiteral(lexeme)) {
      if (!ParseCount(lexeme)) {
        return Fail(absl::StrCat("integer ", lexeme,
                                 " is out of range (at most 2^127 - 1)"));
      }
      return Put(MakeBigInteger(lexeme));
    }
    return Put(value);
  }
  bool string(string_t& value) override { return Put(std::move(value)); }
  bool binary(binary_t& value) override { return Put(std::move(value)); }

  bool start_object(std::size_t) override {
    if (!CheckDepth()) return false;
    Json* node = Put(Json::object());
    if (node == nullptr) return false;
    stack_.push_back(node);
    return true;
  }
  bool key(string_t& key) override {
    Json& object = *stack_.back();
    if (object.contains(key)) {
      return Fail(absl::StrCat("duplicate key \"", key, "\""));
    }
    pending_key_ = std::move(key);
    return true;
  }
  bool end_object() override {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    if (!CheckDepth()) return false;
    Json* node = Put(Json::array());
    if (node == nullptr) return false;
    stack_.push_back(node);
    return true;
  }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& error) override {
    if (error_.empty()) {
      error_ =
          absl::StrCat("invalid JSON at byte ", position, ": ", error.what());
    }
    return false;
  }

  const std::string& error() const { return error_; }

 private:
  // Places `value` at the current position; returns it (nullptr on failure).
  Json* Put(Json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    Json& slot = parent[pending_key_];
    slot = std::move(value);
    return &slot;
  }
  // Recursive consumers (DumpJson, the report parsers) stay stack-safe.
  bool CheckDepth() {
    if (stack_.size() < kMaxJsonDepth) return true;
    return Fail(
        absl::StrCat("JSON nested deeper than ", kMaxJsonDepth, " levels"));
  }
  bool Fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }

  Json& root_;
  std::vector<Json*> stack_;
  std::string pending_key_;
  std::string error_;
};

}  // namespace

Json CountToJson(Count value) {
  if (value >= std::numeric_limits<std::int64_t>::min() &&
      value <= std::numeric_limits<std::int64_t>::max()) {
    return static_cast<std::int64_t>(value);
  }
  if (value > 0 && value <= std::numeric_limits<std::uint64_t>::max()) {
    return static_cast<std::uint64_t>(value);
  }
  return MakeBigInteger(CountToString(value));
}

bool IsJsonInteger(const Json& node) {
  return node.is_number_integer() || IsBigInteger(node);
}

absl::StatusOr<Count> JsonToCount(const Json& node, absl::string_view field) {
  if (node.is_number_unsigned()) return Count(node.get<std::uint64_t>());
  if (node.is_number_integer()) return Count(node.get<std::int64_t>());
  if (IsBigInteger(node)) {
    if (std::optional<Count> value = ParseCount(BigIntegerDigits(node))) {
      return *value;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": expected an integer, got ",
                   node.is_binary() ? "binary data" : node.dump()));
}

namespace {

// Most documents hold no integer beyond 64 bits: nlohmann's own serializer
// writes those several times faster than the node-by-node writer.
bool HoldsBigInteger(const Json& node) {
  if (IsBigInteger(node)) return true;
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      if (HoldsBigInteger(value)) return true;
    }
  } else if (node.is_array()) {
    for (const Json& item : node) {
      if (HoldsBigInteger(item)) return true;
    }
  }
  return false;
}

// True when `style` is nlohmann's own form, which Json::dump writes.
bool IsNativeStyle(const JsonStyle& style) {
  const JsonStyle native = NativeJsonStyle(style.indent);
  return style.item_separator == native.item_separator &&
         style.key_separator == native.key_separator &&
         style.python_floats == native.python_floats &&
         style.ensure_ascii == native.ensure_ascii;
}

}  // namespace

JsonStyle NativeJsonStyle(int indent) {
  return JsonStyle{.indent = indent,
                   .item_separator = ",",
                   .key_separator = indent < 0 ? ":" : ": ",
                   .python_floats = false,
                   .ensure_ascii = false};
}

JsonStyle PythonJsonStyle(int indent) {
  // json.dumps' separators: (", ", ": ") on one line, (",", ": ") indented.
  return JsonStyle{.indent = indent,
                   .item_separator = indent < 0 ? ", " : ",",
                   .key_separator = ": ",
                   .python_floats = true,
                   .ensure_ascii = true};
}

std::string DumpJson(const Json& document, const JsonStyle& style) {
  if (IsNativeStyle(style) && !HoldsBigInteger(document)) {
    return document.dump(style.indent);
  }
  std::string out;
  Dump(document, style, 0, out);
  return out;
}

std::string DumpJson(const Json& document, int indent) {
  return DumpJson(document, NativeJsonStyle(indent));
}

std::string DumpPythonJson(const Json& document, int indent) {
  return DumpJson(document, PythonJsonStyle(indent));
}

absl::StatusOr<Json> ParseJson(absl::string_view text) {
  Json root;
  ExactDomBuilder builder(root);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &builder,
                                  nlohmann::detail::input_format_t::json,
                                  /*strict=*/true);
  if (!ok) {
    return absl::InvalidArgumentError(
        builder.error().empty() ? "invalid JSON" : builder.error());
  }
  return root;
}

}  // namespace torchscan::report
