// Per-operator facts the counting fallback needs on every call, computed once
// per operator and cached per thread, so the hot path does no string work.

#ifndef TORCHSCAN_DISPATCH_OPERATOR_INFO_H_
#define TORCHSCAN_DISPATCH_OPERATOR_INFO_H_

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>

#include <cstdint>
#include <optional>
#include <string>

#include "formulas/elementwise_formulas.h"
#include "formulas/ignored_operators.h"
#include "formulas/operator_formulas.h"
#include "torchscan_dispatch/attention_mask_rule.h"
#include "torchscan_dispatch/byte_rule.h"
#include "torchscan_dispatch/collective_calls.h"
#include "torchscan_dispatch/thread_state.h"

namespace torchscan::dispatch {

// How a call's compute precision is read (compute_precision.h): from its
// tensors' dtypes alone, as a cuBLAS product or cuDNN convolution whose
// float32 may run as TF32, or as int8 for operators that quantize their
// float activations themselves.
enum class PrecisionRule : std::uint8_t {
  kInputs,
  kCublasProduct,
  kCudnnConvolution,
  kInt8,
};

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
  // The elementwise convention's rule (formulas/elementwise_formulas.h),
  // decided from the schema's tags and the softmax and normalisation table;
  // set only for an operator with neither `formula` nor `ignored` and not a
  // communication operator. Applied only in a session that asked for it
  // (CountingSession::elementwise), as if it were `formula`.
  const formulas::OperatorFormulaEntry* elementwise = nullptr;
  // Zero-FLOP under the elementwise convention alone (NOTE [Creation under
  // the elementwise convention] in formulas/elementwise_formulas.h); set
  // under the same conditions as `elementwise`.
  const formulas::IgnoredOperatorEntry* elementwise_ignored = nullptr;
  std::size_t num_arguments = 0;
  std::size_t num_returns = 0;
  // The schema marks an argument as written (`Tensor(a!)`: in-place and out=
  // overloads), or there is no schema to tell: a call may change its
  // arguments' sizes, so they are read after it returns.
  bool writes_arguments = true;
  // What its calls read and write (NOTE [The bytes rule] in byte_rule.h),
  // decided from the schema; undecided without one.
  ByteRule bytes;
  // Set for pseudo-operators that stand for work no operator call shows (a
  // CUDA-graph replay, a compiled graph without a FLOP tally): the report
  // names it with this reason and the total is partial.
  std::string unseen_reason;
  // A communication operator (c10d, functional collectives): `collective`
  // says how to read its volume, or `unknown_collective` that we cannot;
  // `group_argument` indexes its process group (collective_calls.h).
  const CollectiveSpec* collective = nullptr;
  bool unknown_collective = false;
  int group_argument = -1;
  PrecisionRule precision_rule = PrecisionRule::kInputs;
  // NOTE [Arguments the precision scan reads]
  // Bit i set: argument i may hold a tensor, decided once per operator from
  // the schema: every type except those known to hold none (numbers,
  // strings, booleans, dtypes, devices, layouts, generators, None, and
  // lists, optionals, tuples and dicts of only those), so that a type we do
  // not know (Any, a type variable, a class) is visited, as before the mask
  // existed. ComputePrecision visits those arguments alone (a
  // convolution's 3 of 9, attention's 4 of 7). Every bit is set for an
  // operator without a schema; arguments past the 64th are always visited.
  std::uint64_t tensor_arguments = ~std::uint64_t{0};

  // aten::matmul, aten::matmul_backward and the fused inference layers
  // (_native_multi_head_attention, _transformer_encoder_layer_fwd), whose
  // kernels pad strided nested tensors (nested_products.h).
  bool pads_nested = false;
  // Set for attention operators: where their masking is (mask-aware
  // attention, attention_masks.h).
  std::optional<AttentionMaskRule> attention_mask;
  bool is_communication() const {
    return collective != nullptr || unknown_collective;
  }
};

// The facts for `op`, through `cache` (this thread's
// ThisThreadState().operators). Thread-safe; the reference stays valid for
// the life of the process (entries are never freed, even when an operator
// is removed).
const OperatorInfo& OperatorInfoFor(const c10::OperatorHandle& op,
                                    OperatorCache& cache);

// The facts for the operator a RecordFunction reports, or nullptr when it
// names no registered operator. `cache` is keyed by the address of the
// operator schema's name, which the dispatcher keeps stable while the
// operator is registered.
const OperatorInfo* OperatorInfoForRecordFunction(const at::RecordFunction& fn,
                                                  OperatorCache& cache);

// The facts for an operator named by its schema name and overload ("aten::mm",
// "default" or ""), or nullptr when no such operator is registered.
const OperatorInfo* OperatorInfoForName(const std::string& packet,
                                        const std::string& overload);

// An operator the dispatcher does not know: a higher-order operator of a
// compiled graph ("higher_order::flex_attention"), with `formula` if we have
// one, or a pseudo-operator for unseen work (`unseen_reason` set). Made once
// per name and reason; the reference stays valid for the life of the
// process.
const OperatorInfo& SyntheticOperatorInfo(
    const std::string& packet, const formulas::OperatorFormulaEntry* formula,
    const std::string& unseen_reason);

// Looks up an operator seen before by its dense id.
const OperatorInfo& OperatorInfoById(std::uint32_t id);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_OPERATOR_INFO_H_
