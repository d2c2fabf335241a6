// Options of one measurement: formulas for operators the built-in table does
// not know (or counts differently), scoped to that measurement only.

#ifndef TORCHSCAN_DISPATCH_COUNTING_OPTIONS_H_
#define TORCHSCAN_DISPATCH_COUNTING_OPTIONS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "formulas/operator_call.h"
#include "report/count.h"

namespace torchscan {

// FLOPs of one call, from its arguments and results reduced to shapes and
// plain values. Runs inside the measured workload with counting switched
// off, so tensor operators it runs are not counted. A formula that throws a
// std::exception is treated like one that returns an error: the operator
// call still returns normally to the workload, and the report names the
// failure (an operator_formula_error diagnostic; the total is partial).
using CustomFormula = std::function<absl::StatusOr<report::Count>(
    const formulas::OperatorCall& call)>;

struct CountingOptions {
  // Packet name ("mylib::my_op" or "mylib.my_op") to formula. A custom
  // formula replaces the built-in one for that packet and takes an operator
  // off the ignore list. Operators with a CompositeImplicitAutograd kernel
  // are decomposed before any formula applies, as in FlopCounterMode.
  std::vector<std::pair<std::string, CustomFormula>> custom_formulas;
  // Packets whose calls are recorded (arguments and results as meta tensors)
  // for the caller to evaluate after the workload: Python's custom_mapping.
  std::vector<std::string> deferred_packets;
  // Keep the per-call record (call_log.h): every recorded call, in order,
  // with the handle of its profiler event. Off by default.
  bool record_calls = false;
  // Count elementwise work under the elementwise convention
  // (formulas/elementwise_formulas.h): operators without a formula and not
  // ignored that have a rule (pointwise, reduction, softmax,
  // normalisation) are counted by it, and the report's method is
  // report::kElementwiseFlopsMethod. Off by default: the report is then
  // FlopCounterMode's method exactly.
  bool elementwise = false;
};

// "mylib.my_op" -> "mylib::my_op"; names already in schema form unchanged.
std::string SchemaPacketName(const std::string& name);

}  // namespace torchscan

#endif  // TORCHSCAN_DISPATCH_COUNTING_OPTIONS_H_
