// Reading typed values out of JSON, with errors that name the field path.
//
// The one way this project reads a JSON document (reports, diffs, crawl
// records, module descriptions, operator options). A JsonValue is a node of
// the document and its path; JsonObject and JsonArray read their members and
// items, each read returning the value or an InvalidArgument error
// "<path>: <problem>", the path in the document's own terms
// ("report.layers[3].metrics.macs.status"), so a bad file can be fixed
// without a debugger:
//
//   TS_ASSIGN_OR_RETURN(JsonObject layer, JsonValue(node, "layer").Object());
//   TS_RETURN_IF_ERROR(layer.RejectUnknownKeys({"path", "call_index"}));
//   TS_ASSIGN_OR_RETURN(std::string path, layer.String("path"));
//   TS_ASSIGN_OR_RETURN(std::int64_t call_index, layer.Index("call_index"));
//
// The problems, word for word (tests and users match on them):
//   is missing                            a required member is absent
//   unknown field                         RejectUnknownKeys
//   is not a field of this object         RejectUnreadKeys
//   expected an object, got <kind>        Object(); likewise array, string,
//                                         boolean, number, and Expected()
//   expected an integer, got <value>      Integer()
//   expected an integer, got <kind>       Int64()
//   expected a non-negative integer, got <value>
//                                         NonNegativeCount(), Index()
//   must not be negative, got <n>         NonNegativeCount(), Index()
//   is out of range, got <n>              Index()
//   does not fit in 64 bits               Int64()
// where <kind> is JsonKind's word and <value> DescribeJson's text.

#ifndef TORCHSCAN_REPORT_JSON_READER_H_
#define TORCHSCAN_REPORT_JSON_READER_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "report/count.h"
#include "report/json_io.h"

namespace torchscan::report {

// InvalidArgument "<path>: <problem>": the error of every reader below, and
// of checks on typed data that name a field the same way.
absl::Status FieldError(absl::string_view path, absl::string_view problem);

// "parent.key" (or "key" when parent is empty) and "parent[index]".
std::string MemberPath(absl::string_view parent, absl::string_view key);
std::string IndexPath(absl::string_view parent, std::size_t index);

// The JSON type of `node` in words: "object", "array", "string", "integer"
// (big ones too), "float", "boolean", "null".
std::string JsonKind(const Json& node);
// The kind, followed for scalars by the value as json.dumps writes it,
// shortened to 40 characters: "float 1.5", "string \"1\"", "boolean true".
std::string DescribeJson(const Json& node);

class JsonObject;
class JsonArray;

// One node of a document and its path. The node must outlive the value.
class JsonValue {
 public:
  JsonValue(const Json& node, std::string path)
      : node_(&node), path_(std::move(path)) {}

  const Json& node() const { return *node_; }
  const std::string& path() const { return path_; }
  bool is_null() const { return node_->is_null(); }

  // FieldError(path(), problem).
  absl::Status Error(absl::string_view problem) const;
  // Error("expected <what>, got <kind>"), for a type a read below does not
  // cover ("a number or null", "an integer or an array of integers").
  absl::Status Expected(absl::string_view what) const;

  absl::StatusOr<JsonObject> Object() const;
  absl::StatusOr<JsonArray> Array() const;
  absl::StatusOr<std::string> String() const;
  absl::StatusOr<bool> Bool() const;
  // Any integer of Count size.
  absl::StatusOr<Count> Integer() const;
  // A non-negative integer of any Count size (counts, sizes).
  absl::StatusOr<Count> NonNegativeCount() const;
  // A non-negative integer that fits in 64 bits (indexes, depths, shapes).
  absl::StatusOr<std::int64_t> Index() const;
  // Any integer that fits in 64 bits (hyper-parameters).
  absl::StatusOr<std::int64_t> Int64() const;
  // An integer or a float.
  absl::StatusOr<double> Number() const;

 private:
  const Json* node_;
  std::string path_;
};

// A JSON object and its path. It remembers which members were read, for
// RejectUnreadKeys.
class JsonObject {
 public:
  // `value` must hold an object (JsonValue::Object checks).
  explicit JsonObject(JsonValue value) : value_(std::move(value)) {}

  const Json& node() const { return value_.node(); }
  const std::string& path() const { return value_.path(); }
  std::string PathOf(absl::string_view key) const;
  absl::Status Error(absl::string_view problem) const;

  bool Contains(absl::string_view key) const;
  // The member `key` ("<path>.<key>: is missing" when absent).
  absl::StatusOr<JsonValue> Member(absl::string_view key) const;
  // The member `key`, or nullopt when absent.
  std::optional<JsonValue> OptionalMember(absl::string_view key) const;
  // Every member, in document order, each marked read.
  std::vector<std::pair<std::string, JsonValue>> Members() const;

  // Member(key) and the typed read of JsonValue.
  absl::StatusOr<JsonObject> Object(absl::string_view key) const;
  absl::StatusOr<JsonArray> Array(absl::string_view key) const;
  absl::StatusOr<std::string> String(absl::string_view key) const;
  absl::StatusOr<bool> Bool(absl::string_view key) const;
  absl::StatusOr<Count> Integer(absl::string_view key) const;
  absl::StatusOr<Count> NonNegativeCount(absl::string_view key) const;
  absl::StatusOr<std::int64_t> Index(absl::string_view key) const;
  absl::StatusOr<std::int64_t> Int64(absl::string_view key) const;
  absl::StatusOr<double> Number(absl::string_view key) const;

  // Fails on the first member whose key is not in `known`: "unknown field".
  // For objects whose keys are fixed; checked before reading, as a schema.
  absl::Status RejectUnknownKeys(
      std::initializer_list<absl::string_view> known) const;
  absl::Status RejectUnknownKeys(
      absl::Span<const absl::string_view> known) const;
  // Fails on the first member nothing read: "is not a field of this object".
  // For objects whose keys depend on what was read (a module's family);
  // checked after reading.
  absl::Status RejectUnreadKeys() const;

 private:
  JsonValue value_;
  mutable std::set<std::string, std::less<>> read_;
};

// A JSON array and its path.
class JsonArray {
 public:
  // `value` must hold an array (JsonValue::Array checks).
  explicit JsonArray(JsonValue value) : value_(std::move(value)) {}

  const std::string& path() const { return value_.path(); }
  std::size_t size() const { return value_.node().size(); }
  bool empty() const { return value_.node().empty(); }
  // Item `index` (< size()), with path "<path>[<index>]".
  JsonValue Item(std::size_t index) const;

 private:
  JsonValue value_;
};

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_JSON_READER_H_
