#include "report/json_reader.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "report/json_io.h"

namespace torchscan::report {

absl::Status FieldError(absl::string_view path, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", problem));
}

std::string MemberPath(absl::string_view parent, absl::string_view key) {
  return parent.empty() ? std::string(key) : absl::StrCat(parent, ".", key);
}

std::string IndexPath(absl::string_view parent, std::size_t index) {
  return absl::StrCat(parent, "[", index, "]");
}

std::string JsonKind(const Json& node) {
  if (IsJsonInteger(node)) return "integer";
  switch (node.type()) {
    case Json::value_t::number_float:
      return "float";
    case Json::value_t::boolean:
      return "boolean";
    default:
      return node.type_name();
  }
}

std::string DescribeJson(const Json& node) {
  if (node.is_object() || node.is_array() || node.is_binary()) {
    return JsonKind(node);
  }
  // ASCII-only text, so cutting it never splits a character.
  std::string text = DumpPythonJson(node);
  if (text.size() > 40) text = absl::StrCat(text.substr(0, 37), "...");
  return absl::StrCat(JsonKind(node), " ", text);
}

absl::Status JsonValue::Error(absl::string_view problem) const {
  return FieldError(path_, problem);
}

absl::Status JsonValue::Expected(absl::string_view what) const {
  return Error(absl::StrCat("expected ", what, ", got ", JsonKind(*node_)));
}

absl::StatusOr<JsonObject> JsonValue::Object() const {
  if (!node_->is_object()) return Expected("an object");
  return JsonObject(*this);
}

absl::StatusOr<JsonArray> JsonValue::Array() const {
  if (!node_->is_array()) return Expected("an array");
  return JsonArray(*this);
}

absl::StatusOr<std::string> JsonValue::String() const {
  if (!node_->is_string()) return Expected("a string");
  return node_->get<std::string>();
}

absl::StatusOr<bool> JsonValue::Bool() const {
  if (!node_->is_boolean()) return Expected("a boolean");
  return node_->get<bool>();
}

absl::StatusOr<Count> JsonValue::Integer() const {
  if (!IsJsonInteger(*node_)) {
    return Error(
        absl::StrCat("expected an integer, got ", DescribeJson(*node_)));
  }
  return JsonToCount(*node_, path_);
}

absl::StatusOr<Count> JsonValue::NonNegativeCount() const {
  if (!IsJsonInteger(*node_)) {
    return Error(absl::StrCat("expected a non-negative integer, got ",
                              DescribeJson(*node_)));
  }
  TS_ASSIGN_OR_RETURN(Count value, JsonToCount(*node_, path_));
  if (value < 0) {
    return Error(
        absl::StrCat("must not be negative, got ", CountToString(value)));
  }
  return value;
}

absl::StatusOr<std::int64_t> JsonValue::Index() const {
  TS_ASSIGN_OR_RETURN(Count value, NonNegativeCount());
  if (value > std::numeric_limits<std::int64_t>::max()) {
    return Error(absl::StrCat("is out of range, got ", CountToString(value)));
  }
  return static_cast<std::int64_t>(value);
}

absl::StatusOr<std::int64_t> JsonValue::Int64() const {
  if (!IsJsonInteger(*node_)) return Expected("an integer");
  absl::StatusOr<Count> value = JsonToCount(*node_, path_);
  if (!value.ok() || *value < std::numeric_limits<std::int64_t>::min() ||
      *value > std::numeric_limits<std::int64_t>::max()) {
    return Error("does not fit in 64 bits");
  }
  return static_cast<std::int64_t>(*value);
}

absl::StatusOr<double> JsonValue::Number() const {
  if (!node_->is_number()) return Expected("a number");
  return node_->get<double>();
}

std::string JsonObject::PathOf(absl::string_view key) const {
  return MemberPath(path(), key);
}

absl::Status JsonObject::Error(absl::string_view problem) const {
  return value_.Error(problem);
}

bool JsonObject::Contains(absl::string_view key) const {
  return node().contains(std::string(key));
}

std::optional<JsonValue> JsonObject::OptionalMember(
    absl::string_view key) const {
  auto it = node().find(std::string(key));
  if (it == node().end()) return std::nullopt;
  read_.emplace(key);
  return JsonValue(*it, PathOf(key));
}

absl::StatusOr<JsonValue> JsonObject::Member(absl::string_view key) const {
  std::optional<JsonValue> member = OptionalMember(key);
  if (!member) return FieldError(PathOf(key), "is missing");
  return *std::move(member);
}

std::vector<std::pair<std::string, JsonValue>> JsonObject::Members() const {
  std::vector<std::pair<std::string, JsonValue>> members;
  members.reserve(node().size());
  for (const auto& [key, value] : node().items()) {
    read_.insert(key);
    members.emplace_back(key, JsonValue(value, PathOf(key)));
  }
  return members;
}

absl::StatusOr<JsonObject> JsonObject::Object(absl::string_view key) const {
  TS_ASSIGN_OR_RETURN(JsonValue member, Member(key));
  return member.Object();
}

absl::StatusOr<JsonArray> JsonObject::Array(absl::string_view key) const {
  TS_ASSIGN_OR_RETURN(JsonValue member, Member(key));
  return member.Array();
}

absl::StatusOr<std::string> JsonObject::String(absl::string_view key) const {
  TS_ASSIGN_OR_RETURN(JsonValue member, Member(key));
  return member.String();
}

absl::StatusOr<bool> JsonObject::Bool(absl::string_view key) const {
  TS_ASSIGN_OR_RETURN(JsonValue member, Member(key));
  return member.Bool();
}

absl::StatusOr<Count> JsonObject::Integer(absl::string_view key) const {
  TS_ASSIGN_OR_RETURN(JsonValue member, Member(key));
  return member.Integer();
}

absl::StatusOr<Count> JsonObject::NonNegativeCount(
    absl::string_view key) const {
  TS_ASSIGN_OR_RETURN(JsonValue member, Member(key));
  return member.NonNegativeCount();
}

absl::StatusOr<std::int64_t> JsonObject::Index(absl::string_view key) const {
  TS_ASSIGN_OR_RETURN(JsonValue member, Member(key));
  return member.Index();
}

absl::StatusOr<std::int64_t> JsonObject::Int64(absl::string_view key) const {
  TS_ASSIGN_OR_RETURN(JsonValue member, Member(key));
  return member.Int64();
}

absl::StatusOr<double> JsonObject::Number(absl::string_view key) const {
  TS_ASSIGN_OR_RETURN(JsonValue member, Member(key));
  return member.Number();
}

absl::Status JsonObject::RejectUnknownKeys(
    std::initializer_list<absl::string_view> known) const {
  return RejectUnknownKeys(absl::MakeConstSpan(known.begin(), known.end()));
}

absl::Status JsonObject::RejectUnknownKeys(
    absl::Span<const absl::string_view> known) const {
  for (const auto& [key, value] : node().items()) {
    if (std::find(known.begin(), known.end(), absl::string_view(key)) ==
        known.end()) {
      return FieldError(PathOf(key), "unknown field");
    }
  }
  return absl::OkStatus();
}

absl::Status JsonObject::RejectUnreadKeys() const {
  for (const auto& [key, value] : node().items()) {
    if (!read_.contains(key)) {
      return FieldError(PathOf(key), "is not a field of this object");
    }
  }
  return absl::OkStatus();
}

JsonValue JsonArray::Item(std::size_t index) const {
  return JsonValue(value_.node()[index], IndexPath(path(), index));
}

}  // namespace torchscan::report
