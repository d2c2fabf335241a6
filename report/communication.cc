#include "report/communication.h"

#include <array>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "report/count.h"
#include "report/diagnostic.h"
#include "report/field_table.h"
#include "report/json_reader.h"

namespace torchscan::report {
namespace {

constexpr std::array<std::pair<CollectiveKind, absl::string_view>, 11>
    kKindNames = {{
        {CollectiveKind::kAllReduce, "all_reduce"},
        {CollectiveKind::kAllGather, "all_gather"},
        {CollectiveKind::kReduceScatter, "reduce_scatter"},
        {CollectiveKind::kAllToAll, "all_to_all"},
        {CollectiveKind::kBroadcast, "broadcast"},
        {CollectiveKind::kReduce, "reduce"},
        {CollectiveKind::kGather, "gather"},
        {CollectiveKind::kScatter, "scatter"},
        {CollectiveKind::kSend, "send"},
        {CollectiveKind::kRecv, "recv"},
        {CollectiveKind::kBarrier, "barrier"},
    }};

// factor(n) = numerator / denominator (header comment).
std::pair<Count, Count> BusFactor(CollectiveKind kind, std::int64_t n) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return {2 * Count(n - 1), Count(n)};
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return {Count(n - 1), Count(n)};
    case CollectiveKind::kBarrier:
      return {0, 1};
    default:
      return {1, 1};
  }
}

absl::Status AddTally(CollectiveTally& into, const CollectiveTally& from) {
  TS_RETURN_IF_ERROR(AddCount(into.calls, from.calls, "collective calls"));
  return AddCount(into.payload_bytes, from.payload_bytes, "payload bytes");
}

absl::Status GroupSizeMismatch(absl::string_view name, std::int64_t size,
                               std::int64_t other_size) {
  return absl::InvalidArgumentError(
      absl::StrCat("process group '", name, "' has ", size,
                   " ranks in one place and ", other_size, " in another"));
}

}  // namespace

absl::string_view CollectiveKindName(CollectiveKind kind) {
  for (const auto& [k, name] : kKindNames) {
    if (k == kind) return name;
  }
  return "unknown";
}

std::optional<CollectiveKind> CollectiveKindFromName(absl::string_view name) {
  for (const auto& [kind, n] : kKindNames) {
    if (n == name) return kind;
  }
  return std::nullopt;
}

Count BusBytes(CollectiveKind kind, std::int64_t group_size,
               Count payload_bytes) {
  const auto [numerator, denominator] =
      BusFactor(kind, group_size < 1 ? 1 : group_size);
  // S * num / den, rounded half up, without forming S * num.
  const Count quotient = payload_bytes / denominator;
  const Count remainder = payload_bytes % denominator;
  return quotient * numerator +
         (2 * remainder * numerator + denominator) / (2 * denominator);
}

absl::Status CommunicationReport::Add(absl::string_view op, CollectiveKind kind,
                                      absl::string_view group_name,
                                      std::int64_t group_size,
                                      Count payload_bytes) {
  if (group_size < 1) {
    return AddUnreadable(
        op, absl::StrCat("the process group has ", group_size, " ranks"));
  }
  const std::string name(group_name);
  if (auto it = by_group.find(name);
      it != by_group.end() && it->second.size != group_size) {
    return GroupSizeMismatch(name, it->second.size, group_size);
  }
  const CollectiveTally call{1, payload_bytes};
  TS_RETURN_IF_ERROR(AddTally(by_kind[kind][group_size], call));
  GroupCommunication& group = by_group[name];
  group.size = group_size;
  TS_RETURN_IF_ERROR(AddTally(group.by_kind[kind], call));
  return AddCount(by_operator[std::string(op)], 1, "collective calls");
}

absl::Status CommunicationReport::AddUnreadable(absl::string_view op,
                                                absl::string_view reason) {
  UnreadableCollective& entry = unreadable[std::string(op)];
  if (entry.calls == 0) entry.reason = std::string(reason);
  entry.calls += 1;
  return AddCount(by_operator[std::string(op)], 1, "collective calls");
}

absl::Status CommunicationReport::Merge(const CommunicationReport& other) {
  // Checked first, so that a refused merge changes nothing.
  for (const auto& [name, group] : other.by_group) {
    if (auto it = by_group.find(name);
        it != by_group.end() && it->second.size != group.size) {
      return GroupSizeMismatch(name, it->second.size, group.size);
    }
  }
  for (const auto& [name, group] : other.by_group) {
    GroupCommunication& into = by_group[name];
    into.size = group.size;
    for (const auto& [kind, tally] : group.by_kind) {
      TS_RETURN_IF_ERROR(AddTally(into.by_kind[kind], tally));
    }
  }
  for (const auto& [kind, sizes] : other.by_kind) {
    for (const auto& [size, tally] : sizes) {
      TS_RETURN_IF_ERROR(AddTally(by_kind[kind][size], tally));
    }
  }
  for (const auto& [op, calls] : other.by_operator) {
    TS_RETURN_IF_ERROR(AddCount(by_operator[op], calls, "collective calls"));
  }
  for (const auto& [op, entry] : other.unreadable) {
    UnreadableCollective& into = unreadable[op];
    if (into.calls == 0) into.reason = entry.reason;
    TS_RETURN_IF_ERROR(AddCount(into.calls, entry.calls, "collective calls"));
  }
  return absl::OkStatus();
}

CommunicationTotals CommunicationReport::KindTotals(CollectiveKind kind) const {
  CommunicationTotals totals;
  auto it = by_kind.find(kind);
  if (it == by_kind.end()) return totals;
  for (const auto& [size, tally] : it->second) {
    totals.calls += tally.calls;
    totals.payload_bytes += tally.payload_bytes;
    totals.bus_bytes += BusBytes(kind, size, tally.payload_bytes);
  }
  return totals;
}

CommunicationTotals CommunicationReport::GroupTotals(
    const GroupCommunication& group) {
  CommunicationTotals totals;
  for (const auto& [kind, tally] : group.by_kind) {
    totals.calls += tally.calls;
    totals.payload_bytes += tally.payload_bytes;
    totals.bus_bytes += BusBytes(kind, group.size, tally.payload_bytes);
  }
  return totals;
}

CommunicationTotals CommunicationReport::Totals() const {
  CommunicationTotals totals;
  for (const auto& [kind, sizes] : by_kind) {
    const CommunicationTotals kind_totals = KindTotals(kind);
    totals.calls += kind_totals.calls;
    totals.payload_bytes += kind_totals.payload_bytes;
    totals.bus_bytes += kind_totals.bus_bytes;
  }
  return totals;
}

namespace {

CommunicationTotals BucketTotals(CollectiveKind kind, std::int64_t size,
                                 const CollectiveTally& tally) {
  return CommunicationTotals{tally.calls, tally.payload_bytes,
                             BusBytes(kind, size, tally.payload_bytes)};
}

// The kind named `name`, else "<path>: is not a collective kind".
absl::StatusOr<CollectiveKind> KindNamed(absl::string_view name,
                                         const JsonValue& value) {
  std::optional<CollectiveKind> kind = CollectiveKindFromName(name);
  if (!kind) return value.Error("is not a collective kind");
  return *kind;
}

// A bucket's calls and payload bytes; its bus bytes are derived.
absl::StatusOr<CollectiveTally> TallyFromJson(const JsonValue& value) {
  TS_ASSIGN_OR_RETURN(const JsonObject object, value.Object());
  TS_ASSIGN_OR_RETURN(const Count calls, object.NonNegativeCount("calls"));
  TS_ASSIGN_OR_RETURN(const Count payload,
                      object.NonNegativeCount("payload_bytes"));
  return CollectiveTally{calls, payload};
}

}  // namespace

Json CommunicationByKindCodec::Write(const ByKind& by_kind) {
  Json node = Json::object();
  for (const auto& [kind, sizes] : by_kind) {
    CommunicationTotals totals;
    Json by_size = Json::object();
    for (const auto& [size, tally] : sizes) {
      const CommunicationTotals bucket = BucketTotals(kind, size, tally);
      totals.calls += bucket.calls;
      totals.payload_bytes += bucket.payload_bytes;
      totals.bus_bytes += bucket.bus_bytes;
      by_size[absl::StrCat(size)] = ToJson(bucket);
    }
    Json entry = ToJson(totals);
    entry["by_group_size"] = std::move(by_size);
    node[std::string(CollectiveKindName(kind))] = std::move(entry);
  }
  return node;
}

absl::StatusOr<CommunicationByKindCodec::ByKind> CommunicationByKindCodec::Read(
    const JsonValue& node) {
  ByKind by_kind;
  TS_ASSIGN_OR_RETURN(const JsonObject object, node.Object());
  for (const auto& [name, entry] : object.Members()) {
    TS_ASSIGN_OR_RETURN(const CollectiveKind kind, KindNamed(name, entry));
    TS_ASSIGN_OR_RETURN(const JsonObject kind_object, entry.Object());
    TS_ASSIGN_OR_RETURN(const JsonObject sizes,
                        kind_object.Object("by_group_size"));
    for (const auto& [size_text, tally] : sizes.Members()) {
      std::int64_t size = 0;
      if (!absl::SimpleAtoi(size_text, &size) || size < 1) {
        return tally.Error("a group size must be a positive integer");
      }
      TS_ASSIGN_OR_RETURN(by_kind[kind][size], TallyFromJson(tally));
    }
  }
  return by_kind;
}

Json CommunicationByGroupCodec::Write(const ByGroup& by_group) {
  Json node = Json::object();
  for (const auto& [name, group] : by_group) {
    Json entry = Json::object();
    entry["size"] = group.size;
    entry.update(ToJson(CommunicationReport::GroupTotals(group)));
    Json by_kind = Json::object();
    for (const auto& [kind, tally] : group.by_kind) {
      by_kind[std::string(CollectiveKindName(kind))] =
          ToJson(BucketTotals(kind, group.size, tally));
    }
    entry["by_kind"] = std::move(by_kind);
    node[name] = std::move(entry);
  }
  return node;
}

absl::StatusOr<CommunicationByGroupCodec::ByGroup>
CommunicationByGroupCodec::Read(const JsonValue& node) {
  ByGroup groups;
  TS_ASSIGN_OR_RETURN(const JsonObject by_group, node.Object());
  for (const auto& [name, entry] : by_group.Members()) {
    TS_ASSIGN_OR_RETURN(const JsonObject object, entry.Object());
    TS_RETURN_IF_ERROR(object.RejectUnknownKeys(
        {"size", "calls", "payload_bytes", "bus_bytes", "by_kind"}));
    GroupCommunication group;
    TS_ASSIGN_OR_RETURN(group.size, object.Index("size"));
    if (group.size < 1) {
      return FieldError(object.PathOf("size"),
                        "a group size must be a positive integer");
    }
    TS_ASSIGN_OR_RETURN(const JsonObject kinds, object.Object("by_kind"));
    for (const auto& [kind_name, tally] : kinds.Members()) {
      TS_ASSIGN_OR_RETURN(const CollectiveKind kind,
                          KindNamed(kind_name, tally));
      TS_ASSIGN_OR_RETURN(group.by_kind[kind], TallyFromJson(tally));
    }
    groups[name] = std::move(group);
  }
  return groups;
}

// NOTE [by_group and by_kind hold the same calls]
// Every measured call is added to both (unreadable ones to neither), so
// summing by_group's tallies per (kind, group size) gives by_kind exactly.
// A file where they differ was edited or mixed: refused rather than
// trusted either way.
absl::Status CommunicationReport::Validate(absl::string_view path) const {
  std::map<CollectiveKind, std::map<std::int64_t, CollectiveTally>> summed;
  for (const auto& [name, group] : by_group) {
    for (const auto& [kind, tally] : group.by_kind) {
      TS_RETURN_IF_ERROR(AddTally(summed[kind][group.size], tally));
    }
  }
  if (summed == by_kind) return absl::OkStatus();
  return FieldError(MemberPath(path, "by_group"),
                    "does not hold the same calls and payload bytes as "
                    "by_kind (per kind and group size)");
}

Json CommunicationReport::StatusJson(const CommunicationReport& report) {
  return report.complete() ? "complete" : "partial";
}

Json CommunicationReport::TotalJson(const CommunicationReport& report) {
  return ToJson(report.Totals());
}

Json CommunicationReport::DiagnosticsJson(const CommunicationReport& report) {
  Json diagnostics = Json::array();
  for (const auto& [op, entry] : report.unreadable) {
    diagnostics.push_back(ToJson(Diagnostic::ForOperator(
        std::string(kUnreadableCollective), "communication", op,
        absl::StrCat(
            op, " ran ", CountToString(entry.calls),
            " time(s) but its volume could not be read: ", entry.reason))));
  }
  return diagnostics;
}

Json CommunicationToJson(const CommunicationReport& report) {
  return ToJson(report);
}

absl::StatusOr<CommunicationReport> CommunicationFromJson(
    const Json& node, absl::string_view field) {
  return FromJson<CommunicationReport>(JsonValue(node, std::string(field)));
}

}  // namespace torchscan::report
