// Communication volume of one rank: the collectives a workload issued, by
// kind and process-group size and by process group, with payload and bus
// bytes.
//
// Conventions (docs/distributed.md, after NCCL's "Performance reported by
// NCCL tests" and nccl-tests' doc/PERFORMANCE.md):
//  - payload bytes are the "size" S nccl-tests reports for the operation:
//    the buffer of an all-reduce, broadcast, reduce, send or recv; the full
//    gathered buffer of an all-gather; the full input buffer of a
//    reduce-scatter or an all-to-all; what this rank sends (gather) or
//    receives (scatter); 0 for a barrier;
//  - bus bytes = S x factor(n), n the process group's size: all-reduce
//    2(n-1)/n; all-gather, reduce-scatter and all-to-all (n-1)/n; broadcast,
//    reduce, gather, scatter, send, recv 1; barrier 0.
// Payload bytes are exact integers. Bus bytes are computed once per (kind,
// group size) from the exact payload sum and rounded to the nearest integer
// (halves up), so each bucket is within half a byte of the exact value.
// The per-group breakdown rounds the same way per (group, kind), so its bus
// bytes may differ from the by-kind figures by a byte or so when several
// groups of one size are used.

#ifndef TORCHSCAN_REPORT_COMMUNICATION_H_
#define TORCHSCAN_REPORT_COMMUNICATION_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/count.h"
#include "report/field_table.h"
#include "report/json_io.h"

namespace torchscan::report {

// A collective whose size or group could not be read: the communication
// metric is then partial (a lower bound).
inline constexpr absl::string_view kUnreadableCollective =
    "unreadable_collective";

enum class CollectiveKind {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kBroadcast,
  kReduce,
  kGather,
  kScatter,
  kSend,
  kRecv,
  kBarrier,
};

// "all_reduce", "all_gather", ...
absl::string_view CollectiveKindName(CollectiveKind kind);
std::optional<CollectiveKind> CollectiveKindFromName(absl::string_view name);

// Bus bytes of `payload_bytes` moved by collectives of `kind` in groups of
// `group_size` ranks (>= 1), rounded as the header says.
Count BusBytes(CollectiveKind kind, std::int64_t group_size,
               Count payload_bytes);

struct CollectiveTally {
  Count calls = 0;
  Count payload_bytes = 0;

  bool operator==(const CollectiveTally&) const = default;
};

struct CommunicationTotals {
  Count calls = 0;
  Count payload_bytes = 0;
  Count bus_bytes = 0;

  bool operator==(const CommunicationTotals&) const = default;
  static constexpr auto kFields = std::make_tuple(
      FieldAs<NonNegativeCountCodec>("calls", &CommunicationTotals::calls),
      FieldAs<NonNegativeCountCodec>("payload_bytes",
                                     &CommunicationTotals::payload_bytes),
      FieldAs<NonNegativeCountCodec>("bus_bytes",
                                     &CommunicationTotals::bus_bytes));
};

// The collectives of one process group, by kind. A group is named by its
// c10d name (ProcessGroup::getGroupName(), the name a functional collective
// passes), which every member rank of a job knows it by.
struct GroupCommunication {
  std::int64_t size = 0;  // ranks in the group
  std::map<CollectiveKind, CollectiveTally> by_kind;

  bool operator==(const GroupCommunication&) const = default;
};

// Collectives seen that could not be measured, per operator.
struct UnreadableCollective {
  Count calls = 0;
  // Why the first one could not be read.
  std::string reason;

  bool operator==(const UnreadableCollective&) const = default;
  static constexpr auto kFields = std::make_tuple(
      FieldAs<NonNegativeCountCodec>("calls", &UnreadableCollective::calls),
      Field("reason", &UnreadableCollective::reason));
};

// by_kind as written: {kind: {calls, payload_bytes, bus_bytes,
// "by_group_size": {n: {calls, payload_bytes, bus_bytes}}}}, the kind's
// totals and every bucket's bus bytes derived from the buckets' calls and
// payload bytes, which are what is read (a Recomputed row checks the rest).
struct CommunicationByKindCodec {
  using ByKind =
      std::map<CollectiveKind, std::map<std::int64_t, CollectiveTally>>;
  static Json Write(const ByKind& by_kind);
  static absl::StatusOr<ByKind> Read(const JsonValue& node);
};

// by_group as written: {name: {size, calls, payload_bytes, bus_bytes,
// "by_kind": {kind: {calls, payload_bytes, bus_bytes}}}}, the group's
// totals and bus bytes derived from its size and its kinds' calls and
// payload bytes, which are what is read; unknown keys of a group are
// refused.
struct CommunicationByGroupCodec {
  using ByGroup = std::map<std::string, GroupCommunication>;
  static Json Write(const ByGroup& by_group);
  static absl::StatusOr<ByGroup> Read(const JsonValue& node);
};

// Its JSON: {"status", "total", "by_kind", "by_operator", "unreadable",
// "diagnostics", "by_group"} (docs/report-schema.md). Only the tallies are
// read (by_kind's and by_group's calls and payload bytes per kind and group
// size, by_operator, unreadable); everything else (status, bus bytes,
// totals, diagnostics) is derived from them and must be what the file says,
// and by_group must hold the same calls and payload bytes, kind by kind and
// size by size, as by_kind.
struct CommunicationReport {
  // kind -> group size -> tally.
  std::map<CollectiveKind, std::map<std::int64_t, CollectiveTally>> by_kind;
  // group name -> its collectives. Every measured call is in both by_kind
  // and by_group: the two partition the same calls.
  std::map<std::string, GroupCommunication> by_group;
  // Calls per collective operator ("c10d.allreduce_"), measured or not.
  std::map<std::string, Count> by_operator;
  std::map<std::string, UnreadableCollective> unreadable;

  bool operator==(const CommunicationReport&) const = default;
  // by_group holds the calls and payload bytes of by_kind.
  absl::Status Validate(absl::string_view path) const;
  // The derived keys: "complete" or "partial", the totals, and one
  // kUnreadableCollective diagnostic per unreadable operator.
  static Json StatusJson(const CommunicationReport& report);
  static Json TotalJson(const CommunicationReport& report);
  static Json DiagnosticsJson(const CommunicationReport& report);
  static constexpr const char* kDerivedFrom = "the collectives listed";
  // by_group last, so that the members before it read as they did before
  // it existed.
  static constexpr auto kFields = std::make_tuple(
      Derived("status", &StatusJson), Derived("total", &TotalJson),
      FieldAs<CommunicationByKindCodec>("by_kind",
                                        &CommunicationReport::by_kind)
          .Recomputed(),
      FieldAs<MapOf<NonNegativeCountCodec>>("by_operator",
                                            &CommunicationReport::by_operator),
      Field("unreadable", &CommunicationReport::unreadable),
      Derived("diagnostics", &DiagnosticsJson),
      FieldAs<CommunicationByGroupCodec>("by_group",
                                         &CommunicationReport::by_group)
          .Recomputed());

  // Nothing was seen.
  bool empty() const { return by_operator.empty(); }
  // Complete unless some collective could not be read.
  bool complete() const { return unreadable.empty(); }

  // One measured call of operator `op` in the group named `group_name` of
  // `group_size` ranks. Fails, changing nothing, when the report already
  // has that group with another size.
  absl::Status Add(absl::string_view op, CollectiveKind kind,
                   absl::string_view group_name, std::int64_t group_size,
                   Count payload_bytes);
  // One call of `op` that could not be measured, and why.
  absl::Status AddUnreadable(absl::string_view op, absl::string_view reason);
  // Adds everything `other` saw. Fails, changing nothing, when a group name
  // has different sizes in the two reports (they are not of one job).
  absl::Status Merge(const CommunicationReport& other);

  CommunicationTotals Totals() const;
  CommunicationTotals KindTotals(CollectiveKind kind) const;
  // The totals of one entry of by_group: bus bytes per kind, summed.
  static CommunicationTotals GroupTotals(const GroupCommunication& group);
};

// ToJson, by the name its callers know.
Json CommunicationToJson(const CommunicationReport& report);
// FromJson<CommunicationReport> at path `field`.
absl::StatusOr<CommunicationReport> CommunicationFromJson(
    const Json& node, absl::string_view field = "communication");

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_COMMUNICATION_H_
