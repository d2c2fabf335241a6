// ValueMetadata: what a report keeps of a Python value (reference 2.5, the
// "describe" rules) — shapes, dtypes, container structure and class names,
// never tensor contents, strings or non-identifier mapping keys. The records
// are declared in field tables (field_table.h).

#ifndef TORCHSCAN_REPORT_VALUE_METADATA_H_
#define TORCHSCAN_REPORT_VALUE_METADATA_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/count.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::report {

enum class ValueKind {
  kTensor,
  kNone,
  kTuple,
  kList,
  kMapping,
  kScalar,
  kObject,
  // A layer output whose call has not returned (or never returned normally).
  kPending,
};

absl::string_view ValueKindName(ValueKind kind);
absl::StatusOr<ValueKind> ParseValueKind(absl::string_view name);

// A kind by its name; an unknown name is ParseValueKind's error.
template <>
struct JsonCodec<ValueKind> {
  static Json Write(ValueKind kind) { return std::string(ValueKindName(kind)); }
  static absl::StatusOr<ValueKind> Read(const JsonValue& node);
};

// A mapping key as TorchScan keeps it: an int, a bool (Python bools are
// ints), or a string that is an identifier.
using MappingKey = std::variant<Count, bool, std::string>;

// The key as its JSON scalar; a string must be an identifier.
template <>
struct JsonCodec<MappingKey> {
  static Json Write(const MappingKey& key);
  static absl::StatusOr<MappingKey> Read(const JsonValue& node);
};

struct MappingItem;

struct ValueMetadata {
  ValueKind kind = ValueKind::kPending;
  // kTensor only.
  std::vector<std::int64_t> shape;
  std::string dtype;
  std::string device;
  bool requires_grad = false;
  // kMapping and kScalar: the short class name; kObject: the qualified one.
  std::string type;
  // kTuple and kList.
  std::vector<ValueMetadata> items;
  // kMapping, in iteration order.
  std::vector<MappingItem> entries;

  static ValueMetadata Tensor(std::vector<std::int64_t> shape,
                              std::string dtype, std::string device,
                              bool requires_grad);
  static ValueMetadata None();
  static ValueMetadata Tuple(std::vector<ValueMetadata> items);
  static ValueMetadata List(std::vector<ValueMetadata> items);
  static ValueMetadata Mapping(std::string type,
                               std::vector<MappingItem> entries);
  static ValueMetadata Scalar(std::string type);
  static ValueMetadata Object(std::string qualified_type);
  static ValueMetadata Pending();

  bool operator==(const ValueMetadata& other) const;

  // Which kinds have which keys ({"kind": "tensor", "shape": ...}).
  static bool IsTensor(const ValueMetadata& value) {
    return value.kind == ValueKind::kTensor;
  }
  static bool IsSequence(const ValueMetadata& value) {
    return value.kind == ValueKind::kTuple || value.kind == ValueKind::kList;
  }
  static bool IsMapping(const ValueMetadata& value) {
    return value.kind == ValueKind::kMapping;
  }
  static bool IsTyped(const ValueMetadata& value) {
    return value.kind == ValueKind::kMapping ||
           value.kind == ValueKind::kScalar || value.kind == ValueKind::kObject;
  }

  // Deeper structures cannot come from a real call (Python's own recursion
  // limit is 1000 frames); the bound keeps reading hostile input stack-safe.
  static constexpr int kMaxNesting = 200;
  // A tagged record: "kind" says which keys follow. "items" holds the
  // values of a tuple or list and the entries of a mapping.
  static constexpr auto kFields = std::make_tuple(
      Field("kind", &ValueMetadata::kind),
      FieldAs<ArrayOf<IndexCodec>>("shape", &ValueMetadata::shape)
          .When(&IsTensor),
      Field("dtype", &ValueMetadata::dtype).When(&IsTensor),
      Field("device", &ValueMetadata::device).When(&IsTensor),
      Field("requires_grad", &ValueMetadata::requires_grad).When(&IsTensor),
      Field("type", &ValueMetadata::type).When(&IsTyped),
      Field("items", &ValueMetadata::items).When(&IsSequence),
      Field("items", &ValueMetadata::entries).When(&IsMapping));
};

struct MappingItem {
  // Absent when the key was neither an int nor an identifier string.
  std::optional<MappingKey> key;
  std::string key_type;
  ValueMetadata value;

  bool operator==(const MappingItem& other) const;
  static constexpr auto kFields =
      std::make_tuple(Field("key", &MappingItem::key, kOptional),
                      Field("key_type", &MappingItem::key_type),
                      Field("value", &MappingItem::value));
};

// Whether TorchScan would keep `text` as a mapping key. Python's
// str.isidentifier() is approximated on non-ASCII text: any non-ASCII code
// point is accepted, ASCII ones must form [A-Za-z_][A-Za-z0-9_]*.
bool IsIdentifierKey(absl::string_view text);

Json ValueMetadataToJson(const ValueMetadata& value);
absl::StatusOr<ValueMetadata> ValueMetadataFromJson(const Json& node,
                                                    absl::string_view field);

// The arguments of a call: {"args": [...], "kwargs": {name: ...}}.
struct CallMetadata {
  std::vector<ValueMetadata> args;
  std::vector<std::pair<std::string, ValueMetadata>> kwargs;

  bool operator==(const CallMetadata&) const = default;
  static constexpr auto kFields =
      std::make_tuple(Field("args", &CallMetadata::args),
                      Field("kwargs", &CallMetadata::kwargs));
};

Json CallMetadataToJson(const CallMetadata& call);
absl::StatusOr<CallMetadata> CallMetadataFromJson(const Json& node,
                                                  absl::string_view field);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_VALUE_METADATA_H_
