#include "torchscan_dispatch/collective_calls.h"

#include <array>
#include <exception>
#include <string>
#include <torch/csrc/distributed/c10d/GroupRegistry.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace torchscan::dispatch {
namespace {

using report::CollectiveKind;
using report::Count;

constexpr std::array kCollectives = {
    CollectiveSpec{"c10d::allreduce_", CollectiveKind::kAllReduce,
                   PayloadSource::kArgument0},
    CollectiveSpec{"c10d::allreduce_coalesced_", CollectiveKind::kAllReduce,
                   PayloadSource::kArgument0},
    CollectiveSpec{"c10d::allgather_", CollectiveKind::kAllGather,
                   PayloadSource::kArgument0},
    CollectiveSpec{"c10d::_allgather_base_", CollectiveKind::kAllGather,
                   PayloadSource::kArgument0},
    CollectiveSpec{"c10d::allgather_coalesced_", CollectiveKind::kAllGather,
                   PayloadSource::kArgument0},
    CollectiveSpec{"c10d::allgather_into_tensor_coalesced_",
                   CollectiveKind::kAllGather, PayloadSource::kArgument0},
    CollectiveSpec{"c10d::reduce_scatter_", CollectiveKind::kReduceScatter,
                   PayloadSource::kArgument1},
    CollectiveSpec{"c10d::_reduce_scatter_base_",
                   CollectiveKind::kReduceScatter, PayloadSource::kArgument1},
    CollectiveSpec{"c10d::reduce_scatter_tensor_coalesced_",
                   CollectiveKind::kReduceScatter, PayloadSource::kArgument1},
    CollectiveSpec{"c10d::alltoall_", CollectiveKind::kAllToAll,
                   PayloadSource::kArgument1},
    CollectiveSpec{"c10d::alltoall_base_", CollectiveKind::kAllToAll,
                   PayloadSource::kArgument1},
    CollectiveSpec{"c10d::broadcast_", CollectiveKind::kBroadcast,
                   PayloadSource::kArgument0},
    CollectiveSpec{"c10d::reduce_", CollectiveKind::kReduce,
                   PayloadSource::kArgument0},
    CollectiveSpec{"c10d::gather_", CollectiveKind::kGather,
                   PayloadSource::kArgument1},
    CollectiveSpec{"c10d::scatter_", CollectiveKind::kScatter,
                   PayloadSource::kArgument0},
    CollectiveSpec{"c10d::send", CollectiveKind::kSend,
                   PayloadSource::kArgument0},
    CollectiveSpec{"c10d::recv_", CollectiveKind::kRecv,
                   PayloadSource::kArgument0},
    CollectiveSpec{"c10d::recv_any_source_", CollectiveKind::kRecv,
                   PayloadSource::kArgument0},
    CollectiveSpec{"c10d::barrier", CollectiveKind::kBarrier,
                   PayloadSource::kNone},
    CollectiveSpec{"c10d::monitored_barrier_", CollectiveKind::kBarrier,
                   PayloadSource::kNone},
    CollectiveSpec{"_c10d_functional::all_reduce", CollectiveKind::kAllReduce,
                   PayloadSource::kArgument0},
    CollectiveSpec{"_c10d_functional::all_reduce_", CollectiveKind::kAllReduce,
                   PayloadSource::kArgument0},
    CollectiveSpec{"_c10d_functional::all_reduce_coalesced",
                   CollectiveKind::kAllReduce, PayloadSource::kArgument0},
    CollectiveSpec{"_c10d_functional::all_reduce_coalesced_",
                   CollectiveKind::kAllReduce, PayloadSource::kArgument0},
    CollectiveSpec{"_c10d_functional::all_gather_into_tensor",
                   CollectiveKind::kAllGather,
                   PayloadSource::kArgument0TimesGroup},
    CollectiveSpec{"_c10d_functional::all_gather_into_tensor_out",
                   CollectiveKind::kAllGather,
                   PayloadSource::kArgument0TimesGroup},
    CollectiveSpec{"_c10d_functional::all_gather_into_tensor_coalesced",
                   CollectiveKind::kAllGather,
                   PayloadSource::kArgument0TimesGroup},
    CollectiveSpec{"_c10d_functional::reduce_scatter_tensor",
                   CollectiveKind::kReduceScatter, PayloadSource::kArgument0},
    CollectiveSpec{"_c10d_functional::reduce_scatter_tensor_out",
                   CollectiveKind::kReduceScatter, PayloadSource::kArgument0},
    CollectiveSpec{"_c10d_functional::reduce_scatter_tensor_coalesced",
                   CollectiveKind::kReduceScatter, PayloadSource::kArgument0},
    CollectiveSpec{"_c10d_functional::all_to_all_single",
                   CollectiveKind::kAllToAll, PayloadSource::kArgument0},
    CollectiveSpec{"_c10d_functional::broadcast", CollectiveKind::kBroadcast,
                   PayloadSource::kArgument0},
    CollectiveSpec{"_c10d_functional::broadcast_", CollectiveKind::kBroadcast,
                   PayloadSource::kArgument0},
    CollectiveSpec{"_c10d_functional::isend", CollectiveKind::kSend,
                   PayloadSource::kArgument0},
    CollectiveSpec{"_c10d_functional::irecv", CollectiveKind::kRecv,
                   PayloadSource::kArgument0},
    CollectiveSpec{"_c10d_functional_autograd::all_gather_into_tensor",
                   CollectiveKind::kAllGather,
                   PayloadSource::kArgument0TimesGroup},
    CollectiveSpec{"_c10d_functional_autograd::reduce_scatter_tensor",
                   CollectiveKind::kReduceScatter, PayloadSource::kArgument0},
    CollectiveSpec{"_c10d_functional_autograd::all_to_all_single",
                   CollectiveKind::kAllToAll, PayloadSource::kArgument0},
};

// Operators of the collective namespaces that move no data themselves.
constexpr std::array<absl::string_view, 3> kHelpers = {
    "_c10d_functional::wait_tensor", "_c10d_functional::_wrap_tensor_autograd",
    "c10d::check_for_nan"};

constexpr formulas::IgnoredOperatorEntry kCommunicationEntry{
    "c10d::*",
    "Communication is reported under `communication`, not as FLOPs."};

bool InCollectiveNamespace(absl::string_view packet) {
  return absl::StartsWith(packet, "c10d::") ||
         absl::StartsWith(packet, "_c10d_functional::") ||
         absl::StartsWith(packet, "_c10d_functional_autograd::");
}

// Bytes of every tensor in `value` (a tensor, a list, a list of lists).
absl::StatusOr<Count> TensorBytes(const c10::IValue& value) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    if (!tensor.defined()) return Count(0);
    return Count(tensor.numel()) * Count(tensor.element_size());
  }
  if (value.isTensorList()) {
    Count sum = 0;
    for (const at::Tensor& tensor : value.toTensorVector()) {
      sum += Count(tensor.numel()) * Count(tensor.element_size());
    }
    return sum;
  }
  if (value.isList()) {
    Count sum = 0;
    for (const c10::IValue& element : value.toListRef()) {
      TS_ASSIGN_OR_RETURN(const Count bytes, TensorBytes(element));
      sum += bytes;
    }
    return sum;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("expected tensors, got ", value.tagKind()));
}

// The group's name and size, read from the group.
struct GroupIdentity {
  std::string name;
  std::int64_t size = 0;
};

// A group whose name cannot be read (getGroupName() throws for a group
// without a backend) is still measured: its collectives are listed under
// the empty name.
GroupIdentity IdentityOf(const c10d::ProcessGroup& group) {
  GroupIdentity identity{"", group.getSize()};
  try {
    identity.name = group.getGroupName();
  } catch (const std::exception&) {
    identity.name.clear();
  }
  return identity;
}

// NOTE [Process groups in collective calls]
// c10d::* operators take the ProcessGroup itself (a TorchScript custom
// class); the functional collectives take the group's registered name (or,
// from Python, sometimes the object). Either way the size is the group's own
// getSize(), not a guess from tensor shapes, and the name is the group's own
// getGroupName(): for a registered name that is the name itself, the key
// Python's ProcessGroup.group_name and the report's `distributed.groups`
// use too, so each collective can be matched to its group (and mesh
// dimension) there.
absl::StatusOr<GroupIdentity> ReadGroup(const c10::IValue& group) {
  try {
    if (group.isString()) {
      return IdentityOf(*c10d::resolve_process_group(group.toStringRef()));
    }
    if (group.isCustomClass()) {
      return IdentityOf(*group.toCustomClass<c10d::ProcessGroup>());
    }
  } catch (const c10::Error& error) {
    return absl::InvalidArgumentError(
        absl::StrCat("its process group could not be resolved: ",
                     error.what_without_backtrace()));
  } catch (const std::exception& error) {
    return absl::InvalidArgumentError(absl::StrCat(
        "its process group could not be resolved: ", error.what()));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("its process group argument is a ", group.tagKind(),
                   ", not a ProcessGroup or a group name"));
}

}  // namespace

const CollectiveSpec* FindCollective(absl::string_view packet,
                                     bool* unknown_collective) {
  *unknown_collective = false;
  if (!InCollectiveNamespace(packet)) return nullptr;
  for (const CollectiveSpec& spec : kCollectives) {
    if (spec.packet == packet) return &spec;
  }
  for (absl::string_view helper : kHelpers) {
    if (helper == packet) return nullptr;
  }
  *unknown_collective = true;
  return nullptr;
}

const formulas::IgnoredOperatorEntry* CommunicationIgnoredEntry(
    absl::string_view packet) {
  return InCollectiveNamespace(packet) ? &kCommunicationEntry : nullptr;
}

absl::StatusOr<CollectiveVolume> ReadCollective(
    const CollectiveSpec& spec, int group_argument,
    c10::ArrayRef<c10::IValue> arguments) {
  if (group_argument < 0 ||
      group_argument >= static_cast<int>(arguments.size())) {
    return absl::InvalidArgumentError("it has no process-group argument");
  }
  TS_ASSIGN_OR_RETURN(GroupIdentity group,
                      ReadGroup(arguments[group_argument]));
  CollectiveVolume volume{std::move(group.name), group.size, 0};
  const int tensors = spec.payload == PayloadSource::kArgument1 ? 1 : 0;
  if (spec.payload == PayloadSource::kNone) return volume;
  if (tensors >= static_cast<int>(arguments.size())) {
    return absl::InvalidArgumentError("it has too few arguments");
  }
  TS_ASSIGN_OR_RETURN(volume.payload_bytes, TensorBytes(arguments[tensors]));
  if (spec.payload == PayloadSource::kArgument0TimesGroup) {
    volume.payload_bytes *= volume.group_size;
  }
  return volume;
}

}  // namespace torchscan::dispatch
