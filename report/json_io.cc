#include "report/json_io.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

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

void Dump(const Json& node, int indent, int depth, std::string& out) {
  const bool pretty = indent >= 0;
  auto newline = [&](int level) {
    if (!pretty) return;
    out.push_back('\n');
    out.append(static_cast<std::size_t>(indent * level), ' ');
  };
  if (IsBigInteger(node)) {
    out += BigIntegerDigits(node);
  } else if (node.is_object()) {
    if (node.empty()) {
      out += "{}";
      return;
    }
    out.push_back('{');
    bool first = true;
    for (const auto& [key, value] : node.items()) {
      if (!first) out.push_back(',');
      first = false;
      newline(depth + 1);
      out += Json(key).dump();
      out += pretty ? ": " : ":";
      Dump(value, indent, depth + 1, out);
    }
    newline(depth);
    out.push_back('}');
  } else if (node.is_array()) {
    if (node.empty()) {
      out += "[]";
      return;
    }
    out.push_back('[');
    bool first = true;
    for (const Json& item : node) {
      if (!first) out.push_back(',');
      first = false;
      newline(depth + 1);
      Dump(item, indent, depth + 1, out);
    }
    newline(depth);
    out.push_back(']');
  } else {
    out += node.dump();
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

}  // namespace

std::string DumpJson(const Json& document, int indent) {
  if (!HoldsBigInteger(document)) return document.dump(indent);
  std::string out;
  Dump(document, indent, 0, out);
  return out;
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
