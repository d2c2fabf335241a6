#include "report/value_metadata.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "report/json_fields.h"
#include "report/python_text.h"

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
    const Json& item, absl::string_view field) {
  auto it = item.find("key");
  if (it == item.end()) return std::optional<MappingKey>();
  const std::string path = MemberPath(field, "key");
  if (IsJsonInteger(*it)) {
    absl::StatusOr<Count> value = JsonToCount(*it, path);
    if (!value.ok()) return value.status();
    return std::optional<MappingKey>(*value);
  }
  if (it->is_boolean()) return std::optional<MappingKey>(it->get<bool>());
  if (it->is_string()) {
    std::string text = it->get<std::string>();
    if (!IsIdentifierKey(text)) {
      return FieldError(path, "a kept mapping key must be an identifier");
    }
    return std::optional<MappingKey>(std::move(text));
  }
  return FieldError(path,
                    absl::StrCat("expected an integer, boolean or string, got ",
                                 JsonKind(*it)));
}

absl::StatusOr<ValueMetadata> FromJson(const Json& node,
                                       absl::string_view field, int depth);

absl::StatusOr<std::vector<ValueMetadata>> ItemsFromJson(
    const Json& node, absl::string_view field, int depth) {
  absl::StatusOr<const Json*> items = RequireMember(node, "items", field);
  if (!items.ok()) return items.status();
  const std::string path = MemberPath(field, "items");
  if (absl::Status status = ExpectArray(**items, path); !status.ok()) {
    return status;
  }
  std::vector<ValueMetadata> values;
  for (std::size_t i = 0; i < (*items)->size(); ++i) {
    absl::StatusOr<ValueMetadata> value =
        FromJson((**items)[i], IndexPath(path, i), depth + 1);
    if (!value.ok()) return value.status();
    values.push_back(*std::move(value));
  }
  return values;
}

absl::StatusOr<std::vector<MappingItem>> EntriesFromJson(
    const Json& node, absl::string_view field, int depth) {
  absl::StatusOr<const Json*> items = RequireMember(node, "items", field);
  if (!items.ok()) return items.status();
  const std::string path = MemberPath(field, "items");
  if (absl::Status status = ExpectArray(**items, path); !status.ok()) {
    return status;
  }
  std::vector<MappingItem> entries;
  for (std::size_t i = 0; i < (*items)->size(); ++i) {
    const Json& item = (**items)[i];
    const std::string item_path = IndexPath(path, i);
    if (absl::Status status = ExpectObject(item, item_path); !status.ok()) {
      return status;
    }
    if (absl::Status status =
            RejectUnknownKeys(item, {"key", "key_type", "value"}, item_path);
        !status.ok()) {
      return status;
    }
    MappingItem entry;
    absl::StatusOr<std::optional<MappingKey>> key =
        MappingKeyFromJson(item, item_path);
    if (!key.ok()) return key.status();
    entry.key = *std::move(key);
    absl::StatusOr<std::string> key_type =
        RequireString(item, "key_type", item_path);
    if (!key_type.ok()) return key_type.status();
    entry.key_type = *std::move(key_type);
    absl::StatusOr<const Json*> value = RequireMember(item, "value", item_path);
    if (!value.ok()) return value.status();
    absl::StatusOr<ValueMetadata> metadata =
        FromJson(**value, MemberPath(item_path, "value"), depth + 1);
    if (!metadata.ok()) return metadata.status();
    entry.value = *std::move(metadata);
    entries.push_back(std::move(entry));
  }
  return entries;
}

absl::StatusOr<ValueMetadata> FromJson(const Json& node,
                                       absl::string_view field, int depth) {
  if (depth > kMaxNesting) {
    return FieldError(
        field, absl::StrCat("nesting deeper than ", kMaxNesting, " levels"));
  }
  absl::StatusOr<std::string> kind_name = RequireString(node, "kind", field);
  if (!kind_name.ok()) return kind_name.status();
  absl::StatusOr<ValueKind> kind = ParseValueKind(*kind_name);
  if (!kind.ok()) {
    return FieldError(MemberPath(field, "kind"), kind.status().message());
  }
  ValueMetadata value;
  value.kind = *kind;
  absl::Status keys;
  switch (*kind) {
    case ValueKind::kTensor: {
      keys = RejectUnknownKeys(
          node, {"kind", "shape", "dtype", "device", "requires_grad"}, field);
      if (!keys.ok()) return keys;
      absl::StatusOr<const Json*> shape = RequireMember(node, "shape", field);
      if (!shape.ok()) return shape.status();
      const std::string shape_path = MemberPath(field, "shape");
      if (absl::Status status = ExpectArray(**shape, shape_path);
          !status.ok()) {
        return status;
      }
      for (std::size_t i = 0; i < (*shape)->size(); ++i) {
        absl::StatusOr<std::int64_t> size =
            IndexValue((**shape)[i], IndexPath(shape_path, i));
        if (!size.ok()) return size.status();
        value.shape.push_back(*size);
      }
      absl::StatusOr<std::string> dtype = RequireString(node, "dtype", field);
      if (!dtype.ok()) return dtype.status();
      value.dtype = *std::move(dtype);
      absl::StatusOr<std::string> device = RequireString(node, "device", field);
      if (!device.ok()) return device.status();
      value.device = *std::move(device);
      absl::StatusOr<bool> requires_grad =
          RequireBool(node, "requires_grad", field);
      if (!requires_grad.ok()) return requires_grad.status();
      value.requires_grad = *requires_grad;
      return value;
    }
    case ValueKind::kNone:
    case ValueKind::kPending:
      keys = RejectUnknownKeys(node, {"kind"}, field);
      if (!keys.ok()) return keys;
      return value;
    case ValueKind::kTuple:
    case ValueKind::kList: {
      keys = RejectUnknownKeys(node, {"kind", "items"}, field);
      if (!keys.ok()) return keys;
      absl::StatusOr<std::vector<ValueMetadata>> items =
          ItemsFromJson(node, field, depth);
      if (!items.ok()) return items.status();
      value.items = *std::move(items);
      return value;
    }
    case ValueKind::kMapping: {
      keys = RejectUnknownKeys(node, {"kind", "type", "items"}, field);
      if (!keys.ok()) return keys;
      absl::StatusOr<std::string> type = RequireString(node, "type", field);
      if (!type.ok()) return type.status();
      value.type = *std::move(type);
      absl::StatusOr<std::vector<MappingItem>> entries =
          EntriesFromJson(node, field, depth);
      if (!entries.ok()) return entries.status();
      value.entries = *std::move(entries);
      return value;
    }
    case ValueKind::kScalar:
    case ValueKind::kObject: {
      keys = RejectUnknownKeys(node, {"kind", "type"}, field);
      if (!keys.ok()) return keys;
      absl::StatusOr<std::string> type = RequireString(node, "type", field);
      if (!type.ok()) return type.status();
      value.type = *std::move(type);
      return value;
    }
  }
  return FieldError(field, "unknown kind");
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
      "unknown kind ", PythonStringRepr(name),
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
  return FromJson(node, field, 0);
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
  if (absl::Status status = ExpectObject(node, field); !status.ok()) {
    return status;
  }
  if (absl::Status status = RejectUnknownKeys(node, {"args", "kwargs"}, field);
      !status.ok()) {
    return status;
  }
  CallMetadata call;
  absl::StatusOr<const Json*> args = RequireMember(node, "args", field);
  if (!args.ok()) return args.status();
  const std::string args_path = MemberPath(field, "args");
  if (absl::Status status = ExpectArray(**args, args_path); !status.ok()) {
    return status;
  }
  for (std::size_t i = 0; i < (*args)->size(); ++i) {
    absl::StatusOr<ValueMetadata> arg =
        ValueMetadataFromJson((**args)[i], IndexPath(args_path, i));
    if (!arg.ok()) return arg.status();
    call.args.push_back(*std::move(arg));
  }
  absl::StatusOr<const Json*> kwargs = RequireMember(node, "kwargs", field);
  if (!kwargs.ok()) return kwargs.status();
  const std::string kwargs_path = MemberPath(field, "kwargs");
  if (absl::Status status = ExpectObject(**kwargs, kwargs_path); !status.ok()) {
    return status;
  }
  for (const auto& [name, value] : (*kwargs)->items()) {
    absl::StatusOr<ValueMetadata> metadata =
        ValueMetadataFromJson(value, MemberPath(kwargs_path, name));
    if (!metadata.ok()) return metadata.status();
    call.kwargs.emplace_back(name, *std::move(metadata));
  }
  return call;
}

}  // namespace torchscan::report
