#include "report/value_metadata.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "pycompat/python_text.h"
#include "report/json_reader.h"

namespace torchscan::report {
namespace {

// Deeper structures cannot come from a real call (Python's own recursion
// limit is 1000 frames); the bound keeps parsing hostile input stack-safe.
constexpr int kMaxNesting = 200;

constexpr std::array<std::pair<ValueKind, absl::string_view>, 8> kKindNames = {{
    {ValueKind::kTensor, "tensor"},
    {ValueKind::kNone, "none"},
    {ValueKind::kTuple, "tuple"},
    {ValueKind::kList, "list"},
    {ValueKind::kMapping, "mapping"},
    {ValueKind::kScalar, "scalar"},
    {ValueKind::kObject, "object"},
    {ValueKind::kPending, "pending"},
}};

absl::StatusOr<std::optional<MappingKey>> MappingKeyFromJson(
    const JsonObject& item) {
  std::optional<JsonValue> key = item.OptionalMember("key");
  if (!key) return std::optional<MappingKey>();
  if (IsJsonInteger(key->node())) {
    TS_ASSIGN_OR_RETURN(Count value, key->Integer());
    return std::optional<MappingKey>(value);
  }
  if (key->node().is_boolean()) {
    return std::optional<MappingKey>(key->node().get<bool>());
  }
  if (key->node().is_string()) {
    std::string text = key->node().get<std::string>();
    if (!IsIdentifierKey(text)) {
      return key->Error("a kept mapping key must be an identifier");
    }
    return std::optional<MappingKey>(std::move(text));
  }
  return key->Expected("an integer, boolean or string");
}

absl::StatusOr<ValueMetadata> FromJson(const JsonValue& node, int depth);

absl::StatusOr<std::vector<ValueMetadata>> ItemsFromJson(const JsonObject& node,
                                                         int depth) {
  TS_ASSIGN_OR_RETURN(JsonArray items, node.Array("items"));
  std::vector<ValueMetadata> values;
  for (std::size_t i = 0; i < items.size(); ++i) {
    TS_ASSIGN_OR_RETURN(ValueMetadata value,
                        FromJson(items.Item(i), depth + 1));
    values.push_back(std::move(value));
  }
  return values;
}

absl::StatusOr<std::vector<MappingItem>> EntriesFromJson(const JsonObject& node,
                                                         int depth) {
  TS_ASSIGN_OR_RETURN(JsonArray items, node.Array("items"));
  std::vector<MappingItem> entries;
  for (std::size_t i = 0; i < items.size(); ++i) {
    TS_ASSIGN_OR_RETURN(JsonObject item, items.Item(i).Object());
    TS_RETURN_IF_ERROR(item.RejectUnknownKeys({"key", "key_type", "value"}));
    MappingItem entry;
    TS_ASSIGN_OR_RETURN(entry.key, MappingKeyFromJson(item));
    TS_ASSIGN_OR_RETURN(entry.key_type, item.String("key_type"));
    TS_ASSIGN_OR_RETURN(JsonValue value, item.Member("value"));
    TS_ASSIGN_OR_RETURN(entry.value, FromJson(value, depth + 1));
    entries.push_back(std::move(entry));
  }
  return entries;
}

absl::StatusOr<ValueMetadata> FromJson(const JsonValue& node, int depth) {
  if (depth > kMaxNesting) {
    return node.Error(
        absl::StrCat("nesting deeper than ", kMaxNesting, " levels"));
  }
  TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
  TS_ASSIGN_OR_RETURN(std::string kind_name, object.String("kind"));
  absl::StatusOr<ValueKind> kind = ParseValueKind(kind_name);
  if (!kind.ok()) {
    return FieldError(object.PathOf("kind"), kind.status().message());
  }
  ValueMetadata value;
  value.kind = *kind;
  switch (*kind) {
    case ValueKind::kTensor: {
      TS_RETURN_IF_ERROR(object.RejectUnknownKeys(
          {"kind", "shape", "dtype", "device", "requires_grad"}));
      TS_ASSIGN_OR_RETURN(JsonArray shape, object.Array("shape"));
      for (std::size_t i = 0; i < shape.size(); ++i) {
        TS_ASSIGN_OR_RETURN(std::int64_t size, shape.Item(i).Index());
        value.shape.push_back(size);
      }
      TS_ASSIGN_OR_RETURN(value.dtype, object.String("dtype"));
      TS_ASSIGN_OR_RETURN(value.device, object.String("device"));
      TS_ASSIGN_OR_RETURN(value.requires_grad, object.Bool("requires_grad"));
      return value;
    }
    case ValueKind::kNone:
    case ValueKind::kPending:
      TS_RETURN_IF_ERROR(object.RejectUnknownKeys({"kind"}));
      return value;
    case ValueKind::kTuple:
    case ValueKind::kList: {
      TS_RETURN_IF_ERROR(object.RejectUnknownKeys({"kind", "items"}));
      TS_ASSIGN_OR_RETURN(value.items, ItemsFromJson(object, depth));
      return value;
    }
    case ValueKind::kMapping: {
      TS_RETURN_IF_ERROR(object.RejectUnknownKeys({"kind", "type", "items"}));
      TS_ASSIGN_OR_RETURN(value.type, object.String("type"));
      TS_ASSIGN_OR_RETURN(value.entries, EntriesFromJson(object, depth));
      return value;
    }
    case ValueKind::kScalar:
    case ValueKind::kObject: {
      TS_RETURN_IF_ERROR(object.RejectUnknownKeys({"kind", "type"}));
      TS_ASSIGN_OR_RETURN(value.type, object.String("type"));
      return value;
    }
  }
  return object.Error("unknown kind");
}

}  // namespace

absl::string_view ValueKindName(ValueKind kind) {
  for (const auto& [candidate, name] : kKindNames) {
    if (candidate == kind) return name;
  }
  return "pending";
}

absl::StatusOr<ValueKind> ParseValueKind(absl::string_view name) {
  for (const auto& [kind, candidate] : kKindNames) {
    if (candidate == name) return kind;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown kind ", pycompat::PythonStringRepr(name),
      " (expected tensor, none, tuple, list, mapping, scalar, object or "
      "pending)"));
}

ValueMetadata ValueMetadata::Tensor(std::vector<std::int64_t> shape,
                                    std::string dtype, std::string device,
                                    bool requires_grad) {
  ValueMetadata value;
  value.kind = ValueKind::kTensor;
  value.shape = std::move(shape);
  value.dtype = std::move(dtype);
  value.device = std::move(device);
  value.requires_grad = requires_grad;
  return value;
}

ValueMetadata ValueMetadata::None() {
  ValueMetadata value;
  value.kind = ValueKind::kNone;
  return value;
}

ValueMetadata ValueMetadata::Tuple(std::vector<ValueMetadata> items) {
  ValueMetadata value;
  value.kind = ValueKind::kTuple;
  value.items = std::move(items);
  return value;
}

ValueMetadata ValueMetadata::List(std::vector<ValueMetadata> items) {
  ValueMetadata value;
  value.kind = ValueKind::kList;
  value.items = std::move(items);
  return value;
}

ValueMetadata ValueMetadata::Mapping(std::string type,
                                     std::vector<MappingItem> entries) {
  ValueMetadata value;
  value.kind = ValueKind::kMapping;
  value.type = std::move(type);
  value.entries = std::move(entries);
  return value;
}

ValueMetadata ValueMetadata::Scalar(std::string type) {
  ValueMetadata value;
  value.kind = ValueKind::kScalar;
  value.type = std::move(type);
  return value;
}

ValueMetadata ValueMetadata::Object(std::string qualified_type) {
  ValueMetadata value;
  value.kind = ValueKind::kObject;
  value.type = std::move(qualified_type);
  return value;
}

ValueMetadata ValueMetadata::Pending() { return ValueMetadata(); }

bool ValueMetadata::operator==(const ValueMetadata& other) const {
  return kind == other.kind && shape == other.shape && dtype == other.dtype &&
         device == other.device && requires_grad == other.requires_grad &&
         type == other.type && items == other.items && entries == other.entries;
}

bool MappingItem::operator==(const MappingItem& other) const {
  return key == other.key && key_type == other.key_type && value == other.value;
}

bool IsIdentifierKey(absl::string_view text) {
  if (text.empty()) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) continue;
    const bool letter =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0)) return false;
  }
  return true;
}

Json ValueMetadataToJson(const ValueMetadata& value) {
  Json node = Json::object();
  node["kind"] = std::string(ValueKindName(value.kind));
  switch (value.kind) {
    case ValueKind::kTensor:
      node["shape"] = Json::array();
      for (std::int64_t size : value.shape) node["shape"].push_back(size);
      node["dtype"] = value.dtype;
      node["device"] = value.device;
      node["requires_grad"] = value.requires_grad;
      break;
    case ValueKind::kTuple:
    case ValueKind::kList:
      node["items"] = Json::array();
      for (const ValueMetadata& item : value.items) {
        node["items"].push_back(ValueMetadataToJson(item));
      }
      break;
    case ValueKind::kMapping:
      node["type"] = value.type;
      node["items"] = Json::array();
      for (const MappingItem& entry : value.entries) {
        Json item = Json::object();
        if (entry.key.has_value()) {
          if (const Count* integer = std::get_if<Count>(&*entry.key)) {
            item["key"] = CountToJson(*integer);
          } else if (const bool* flag = std::get_if<bool>(&*entry.key)) {
            item["key"] = *flag;
          } else {
            item["key"] = std::get<std::string>(*entry.key);
          }
        }
        item["key_type"] = entry.key_type;
        item["value"] = ValueMetadataToJson(entry.value);
        node["items"].push_back(std::move(item));
      }
      break;
    case ValueKind::kScalar:
    case ValueKind::kObject:
      node["type"] = value.type;
      break;
    case ValueKind::kNone:
    case ValueKind::kPending:
      break;
  }
  return node;
}

absl::StatusOr<ValueMetadata> ValueMetadataFromJson(const Json& node,
                                                    absl::string_view field) {
  return FromJson(JsonValue(node, std::string(field)), 0);
}

Json CallMetadataToJson(const CallMetadata& call) {
  Json node = Json::object();
  node["args"] = Json::array();
  for (const ValueMetadata& arg : call.args) {
    node["args"].push_back(ValueMetadataToJson(arg));
  }
  node["kwargs"] = Json::object();
  for (const auto& [name, value] : call.kwargs) {
    node["kwargs"][name] = ValueMetadataToJson(value);
  }
  return node;
}

absl::StatusOr<CallMetadata> CallMetadataFromJson(const Json& node,
                                                  absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject object,
                      JsonValue(node, std::string(field)).Object());
  TS_RETURN_IF_ERROR(object.RejectUnknownKeys({"args", "kwargs"}));
  CallMetadata call;
  TS_ASSIGN_OR_RETURN(JsonArray args, object.Array("args"));
  for (std::size_t i = 0; i < args.size(); ++i) {
    TS_ASSIGN_OR_RETURN(ValueMetadata arg, FromJson(args.Item(i), 0));
    call.args.push_back(std::move(arg));
  }
  TS_ASSIGN_OR_RETURN(JsonObject kwargs, object.Object("kwargs"));
  for (auto& [name, value] : kwargs.Members()) {
    TS_ASSIGN_OR_RETURN(ValueMetadata metadata, FromJson(value, 0));
    call.kwargs.emplace_back(name, std::move(metadata));
  }
  return call;
}

}  // namespace torchscan::report
