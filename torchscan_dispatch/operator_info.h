// Per-operator facts the counting fallback needs on every call, computed once
// per operator and cached per thread, so the hot path does no string work.

#ifndef TORCHSCAN_DISPATCH_OPERATOR_INFO_H_
#define TORCHSCAN_DISPATCH_OPERATOR_INFO_H_

#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <string>

#include "formulas/ignored_operators.h"
#include "formulas/operator_formulas.h"
#include "torchscan_dispatch/thread_state.h"

namespace torchscan::dispatch {

struct OperatorInfo {
  // Dense id, stable for the life of the process.
  std::uint32_t id = 0;
  // Packet name as reports print it: "aten.mm".
  std::string report_name;
  // Schema packet name: "aten::mm".
  std::string packet;
  // Overload name: "" for the default overload, "out", "Tensor", ...
  std::string overload;
  // The overload has a CompositeImplicitAutograd kernel: it is never counted
  // itself; its decomposition comes back through the fallback op by op,
  // exactly as FlopCounterMode decomposes such operators.
  bool decomposes = false;
  const formulas::OperatorFormulaEntry* formula = nullptr;
  const formulas::IgnoredOperatorEntry* ignored = nullptr;
  std::size_t num_arguments = 0;
  std::size_t num_returns = 0;
};

// The facts for `op`, through `cache` (this thread's
// ThisThreadState().operators). Thread-safe; the reference stays valid for
// the life of the process (entries are never freed, even when an operator
// is removed).
const OperatorInfo& OperatorInfoFor(const c10::OperatorHandle& op,
                                    OperatorCache& cache);

// Looks up an operator seen before by its dense id.
const OperatorInfo& OperatorInfoById(std::uint32_t id);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_OPERATOR_INFO_H_
