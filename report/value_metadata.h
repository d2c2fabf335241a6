// ValueMetadata: what a report keeps of a Python value (reference 2.5, the
// "describe" rules) — shapes, dtypes, container structure and class names,
// never tensor contents, strings or non-identifier mapping keys.

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
#include "report/json_io.h"

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

// A mapping key as TorchScan keeps it: an int, a bool (Python bools are
// ints), or a string that is an identifier.
using MappingKey = std::variant<Count, bool, std::string>;

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
};

struct MappingItem {
  // Absent when the key was neither an int nor an identifier string.
  std::optional<MappingKey> key;
  std::string key_type;
  ValueMetadata value;

  bool operator==(const MappingItem& other) const;
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
};

Json CallMetadataToJson(const CallMetadata& call);
absl::StatusOr<CallMetadata> CallMetadataFromJson(const Json& node,
                                                  absl::string_view field);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_VALUE_METADATA_H_
