// Reading typed fields out of JSON with errors that name the field path.
//
// Every error reads "<path>: <problem>", the path in the document's own
// terms ("report.layers[3].metrics.macs.status"), so a bad file can be fixed
// without a debugger.

#ifndef TORCHSCAN_REPORT_JSON_FIELDS_H_
#define TORCHSCAN_REPORT_JSON_FIELDS_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/count.h"
#include "report/json_io.h"

namespace torchscan::report {

absl::Status FieldError(absl::string_view field, absl::string_view problem);

// "parent.key" (or "key" when parent is empty) and "parent[index]".
std::string MemberPath(absl::string_view parent, absl::string_view key);
std::string IndexPath(absl::string_view parent, std::size_t index);

// The JSON type of `node` in words ("object", "string", "integer", ...).
std::string JsonKind(const Json& node);
// The kind, followed for scalars by the (shortened) value: "float 1.5".
std::string DescribeJson(const Json& node);

absl::Status ExpectObject(const Json& node, absl::string_view field);
absl::Status ExpectArray(const Json& node, absl::string_view field);
// Fails on the first key of `object` that is not in `known`.
absl::Status RejectUnknownKeys(const Json& object,
                               std::initializer_list<absl::string_view> known,
                               absl::string_view field);

// object[key]; `field` is the object's path.
absl::StatusOr<const Json*> RequireMember(const Json& object,
                                          absl::string_view key,
                                          absl::string_view field);
absl::StatusOr<std::string> RequireString(const Json& object,
                                          absl::string_view key,
                                          absl::string_view field);
absl::StatusOr<bool> RequireBool(const Json& object, absl::string_view key,
                                 absl::string_view field);
// A non-negative integer of any Count size.
absl::StatusOr<Count> RequireCount(const Json& object, absl::string_view key,
                                   absl::string_view field);
// A non-negative integer that fits in 64 bits (indexes, depths, sizes).
absl::StatusOr<std::int64_t> RequireIndex(const Json& object,
                                          absl::string_view key,
                                          absl::string_view field);

// The same checks on a node already in hand; `field` is the node's path.
absl::StatusOr<std::string> StringValue(const Json& node,
                                        absl::string_view field);
absl::StatusOr<Count> NonNegativeCountValue(const Json& node,
                                            absl::string_view field);
absl::StatusOr<std::int64_t> IndexValue(const Json& node,
                                        absl::string_view field);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_JSON_FIELDS_H_
