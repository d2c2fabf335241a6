#include "report/json_fields.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "report/python_json.h"

namespace torchscan::report {

absl::Status FieldError(absl::string_view field, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
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

absl::Status ExpectObject(const Json& node, absl::string_view field) {
  if (node.is_object()) return absl::OkStatus();
  return FieldError(field,
                    absl::StrCat("expected an object, got ", JsonKind(node)));
}

absl::Status ExpectArray(const Json& node, absl::string_view field) {
  if (node.is_array()) return absl::OkStatus();
  return FieldError(field,
                    absl::StrCat("expected an array, got ", JsonKind(node)));
}

absl::Status RejectUnknownKeys(const Json& object,
                               std::initializer_list<absl::string_view> known,
                               absl::string_view field) {
  for (const auto& [key, value] : object.items()) {
    if (std::find(known.begin(), known.end(), absl::string_view(key)) ==
        known.end()) {
      return FieldError(MemberPath(field, key), "unknown field");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<const Json*> RequireMember(const Json& object,
                                          absl::string_view key,
                                          absl::string_view field) {
  if (absl::Status status = ExpectObject(object, field); !status.ok()) {
    return status;
  }
  auto it = object.find(std::string(key));
  if (it == object.end()) {
    return FieldError(MemberPath(field, key), "is missing");
  }
  return &*it;
}

absl::StatusOr<std::string> StringValue(const Json& node,
                                        absl::string_view field) {
  if (!node.is_string()) {
    return FieldError(field,
                      absl::StrCat("expected a string, got ", JsonKind(node)));
  }
  return node.get<std::string>();
}

absl::StatusOr<Count> NonNegativeCountValue(const Json& node,
                                            absl::string_view field) {
  if (!IsJsonInteger(node)) {
    return FieldError(field,
                      absl::StrCat("expected a non-negative integer, got ",
                                   DescribeJson(node)));
  }
  absl::StatusOr<Count> value = JsonToCount(node, field);
  if (!value.ok()) return value.status();
  if (*value < 0) {
    return FieldError(field, absl::StrCat("must not be negative, got ",
                                          CountToString(*value)));
  }
  return value;
}

absl::StatusOr<std::int64_t> IndexValue(const Json& node,
                                        absl::string_view field) {
  absl::StatusOr<Count> value = NonNegativeCountValue(node, field);
  if (!value.ok()) return value.status();
  if (*value > std::numeric_limits<std::int64_t>::max()) {
    return FieldError(
        field, absl::StrCat("is out of range, got ", CountToString(*value)));
  }
  return static_cast<std::int64_t>(*value);
}

absl::StatusOr<std::string> RequireString(const Json& object,
                                          absl::string_view key,
                                          absl::string_view field) {
  absl::StatusOr<const Json*> member = RequireMember(object, key, field);
  if (!member.ok()) return member.status();
  return StringValue(**member, MemberPath(field, key));
}

absl::StatusOr<bool> RequireBool(const Json& object, absl::string_view key,
                                 absl::string_view field) {
  absl::StatusOr<const Json*> member = RequireMember(object, key, field);
  if (!member.ok()) return member.status();
  if (!(*member)->is_boolean()) {
    return FieldError(
        MemberPath(field, key),
        absl::StrCat("expected a boolean, got ", JsonKind(**member)));
  }
  return (*member)->get<bool>();
}

absl::StatusOr<Count> RequireCount(const Json& object, absl::string_view key,
                                   absl::string_view field) {
  absl::StatusOr<const Json*> member = RequireMember(object, key, field);
  if (!member.ok()) return member.status();
  return NonNegativeCountValue(**member, MemberPath(field, key));
}

absl::StatusOr<std::int64_t> RequireIndex(const Json& object,
                                          absl::string_view key,
                                          absl::string_view field) {
  absl::StatusOr<const Json*> member = RequireMember(object, key, field);
  if (!member.ok()) return member.status();
  return IndexValue(**member, MemberPath(field, key));
}

}  // namespace torchscan::report
