#include "report/value_metadata.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "report/json_reader.h"
#include "report/python_text.h"

namespace torchscan::report {
namespace {

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

}  // namespace

absl::StatusOr<ValueKind> JsonCodec<ValueKind>::Read(const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(std::string name, node.String());
  absl::StatusOr<ValueKind> kind = ParseValueKind(name);
  if (!kind.ok()) return node.Error(kind.status().message());
  return *kind;
}

Json JsonCodec<MappingKey>::Write(const MappingKey& key) {
  if (const Count* integer = std::get_if<Count>(&key)) {
    return CountToJson(*integer);
  }
  if (const bool* flag = std::get_if<bool>(&key)) return *flag;
  return std::get<std::string>(key);
}

absl::StatusOr<MappingKey> JsonCodec<MappingKey>::Read(const JsonValue& node) {
  if (IsJsonInteger(node.node())) {
    TS_ASSIGN_OR_RETURN(Count value, node.Integer());
    return MappingKey(value);
  }
  if (node.node().is_boolean()) return MappingKey(node.node().get<bool>());
  if (node.node().is_string()) {
    std::string text = node.node().get<std::string>();
    if (!IsIdentifierKey(text)) {
      return node.Error("a kept mapping key must be an identifier");
    }
    return MappingKey(std::move(text));
  }
  return node.Expected("an integer, boolean or string");
}

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

Json ValueMetadataToJson(const ValueMetadata& value) { return ToJson(value); }

absl::StatusOr<ValueMetadata> ValueMetadataFromJson(const Json& node,
                                                    absl::string_view field) {
  return FromJson<ValueMetadata>(JsonValue(node, std::string(field)));
}

Json CallMetadataToJson(const CallMetadata& call) { return ToJson(call); }

absl::StatusOr<CallMetadata> CallMetadataFromJson(const Json& node,
                                                  absl::string_view field) {
  return FromJson<CallMetadata>(JsonValue(node, std::string(field)));
}

}  // namespace torchscan::report
