// Reading a collective's volume from its operator call: which c10d and
// functional-collective operators are communication, their kind, the name
// and size of their process group and their payload bytes
// (report/communication.h has the conventions).

#ifndef TORCHSCAN_DISPATCH_COLLECTIVE_CALLS_H_
#define TORCHSCAN_DISPATCH_COLLECTIVE_CALLS_H_

#include <ATen/core/ivalue.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "formulas/ignored_operators.h"
#include "report/communication.h"
#include "report/count.h"

namespace torchscan::dispatch {

// Where an operator's payload is read from.
enum class PayloadSource {
  kNone,                 // a barrier
  kArgument0,            // every tensor in argument 0
  kArgument1,            // every tensor in argument 1
  kArgument0TimesGroup,  // argument 0's tensors, times the group size
};

struct CollectiveSpec {
  absl::string_view packet;  // "c10d::allreduce_"
  report::CollectiveKind kind;
  PayloadSource payload;
};

// The spec of a communication operator, or nullptr. `unknown_collective` is
// set for an operator of a collective namespace (c10d, _c10d_functional,
// _c10d_functional_autograd) that is neither a known collective nor one of
// their non-communicating helpers (wait_tensor, check_for_nan).
const CollectiveSpec* FindCollective(absl::string_view packet,
                                     bool* unknown_collective);

// Whether `packet` is in a collective namespace: such operators are zero
// FLOPs (the entry gives the reason).
const formulas::IgnoredOperatorEntry* CommunicationIgnoredEntry(
    absl::string_view packet);

struct CollectiveVolume {
  // The group's c10d name (ProcessGroup::getGroupName(): the name
  // torch.distributed registered it under; empty for a group never named).
  std::string group_name;
  std::int64_t group_size = 0;
  report::Count payload_bytes = 0;
};

// The volume of one call of `spec`; `group_argument` is the index of its
// process-group argument (a ProcessGroup object or a registered group name).
absl::StatusOr<CollectiveVolume> ReadCollective(
    const CollectiveSpec& spec, int group_argument,
    c10::ArrayRef<c10::IValue> arguments);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_COLLECTIVE_CALLS_H_
