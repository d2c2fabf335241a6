// Field readers of the communication and job-merge parsers, over
// report/json_reader.h (the one JSON reader): each error names the path.

#ifndef TORCHSCAN_REPORT_JSON_FIELD_HELPERS_H_
#define TORCHSCAN_REPORT_JSON_FIELD_HELPERS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "report/count.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::report::json_fields {

inline absl::Status ExpectObject(const Json& node, absl::string_view field) {
  return JsonValue(node, std::string(field)).Object().status();
}
inline absl::Status ExpectArray(const Json& node, absl::string_view field) {
  return JsonValue(node, std::string(field)).Array().status();
}
inline absl::StatusOr<const Json*> RequireMember(const Json& object,
                                                 absl::string_view key,
                                                 absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject parsed,
                      JsonValue(object, std::string(field)).Object());
  TS_ASSIGN_OR_RETURN(JsonValue member, parsed.Member(key));
  return &member.node();
}
inline absl::StatusOr<std::string> RequireString(const Json& object,
                                                 absl::string_view key,
                                                 absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject parsed,
                      JsonValue(object, std::string(field)).Object());
  return parsed.String(key);
}
inline absl::StatusOr<Count> RequireCount(const Json& object,
                                          absl::string_view key,
                                          absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject parsed,
                      JsonValue(object, std::string(field)).Object());
  return parsed.NonNegativeCount(key);
}
inline absl::StatusOr<std::int64_t> RequireIndex(const Json& object,
                                                 absl::string_view key,
                                                 absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject parsed,
                      JsonValue(object, std::string(field)).Object());
  return parsed.Index(key);
}
inline absl::StatusOr<Count> NonNegativeCountValue(const Json& node,
                                                   absl::string_view field) {
  return JsonValue(node, std::string(field)).NonNegativeCount();
}
inline absl::StatusOr<std::int64_t> IndexValue(const Json& node,
                                               absl::string_view field) {
  return JsonValue(node, std::string(field)).Index();
}

}  // namespace torchscan::report::json_fields

#endif  // TORCHSCAN_REPORT_JSON_FIELD_HELPERS_H_
