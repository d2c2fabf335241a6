// CompiledGraphTally: the operators of one compiled graph, described once
// when PyTorch compiles it and recorded each time the compiled code runs.
//
// A torch.compile'd graph runs matrix products that no dispatcher call shows
// (Inductor's CPU GEMM template, Triton and CUTLASS templates, CUDA-graph
// replay), so counting at the dispatch key cannot see a compiled graph's
// work. Instead, the Python package's Inductor pass
// (python/torchscan_dispatch/_tally_pass.py) describes every operator
// of the post-grad graph (its name, its argument and result shapes, whose
// dimensions may be symbols bound at run time, and its module stack) and
// inserts a call of torchscan::compiled_graph_flops into the graph. The
// generated code then reports the graph whenever it runs, also when it was
// loaded from a compilation cache, which skips the passes.
//
// The description (the "spec") is JSON, its records declared in
// compiled_graph_spec.h:
//   {"version": 6,                // kSpecVersion; absent means this one
//    "family": "0/0",             // Dynamo's compile id: a forward graph and
//                                  // its backward share it
//    "graph": "forward",          // or "backward", "inference"; optional
//    "calls": [{"op": "aten::mm", "overload": "default",
//               "modules": [["L['self']", "layers.0", "Block"], ...],
//               "arguments": [VALUE, ...], "results": [VALUE, ...]}, ...],
//    "inputs": [VALUE, ...],      // the graph's inputs it reads, and
//    "outputs": [VALUE, ...]}     // the outputs it writes (optional)
// where a VALUE is one of {"tensor": [DIM, ...], "dtype": DTYPE},
// {"int": DIM}, {"ints": [DIM, ...]}, {"bool": b}, {"bools": [b, ...]},
// {"float": x}, {"tensors": [[DIM, ...] or null, ...], "dtypes": [DTYPE or
// null, ...]}, {"str": "text"}, {"none": null}, {"unknown_tensor": null} or
// {"other": null};
// a DIM is an integer or {"symbol": i}, the i-th value of the SymInt list
// the call passes; every integer fits in 64 bits (the pass describes a
// larger one as "other"); a float is a number or one of "inf", "-inf" and
// "nan" (JSON has no non-finite numbers); and a DTYPE is the tensor's dtype
// as Python names it without "torch." ("float32", "bfloat16", "int64"). The
// "dtype" and "dtypes" members are optional (the built-in formulas read
// shapes only; a deferred formula gets a tensor without a dtype as None), a
// null in "tensors" is a tensor of unknown shape, and "dtypes", when
// present, has one entry per tensor. A string argument is kept ("str": a
// collective's group name is one); whatever else no formula reads (complex
// numbers, devices, dtypes as arguments, symbolic floats and booleans) is
// "other". A call with
// "form": "decomposed_product" is the broadcast multiply that Inductor's
// decomposition made of the matrix product `op` (NOTE [Products that
// Inductor decomposed] in the .cc). A call with "recomputed": true is
// forward work that a compiled backward runs again (AOTAutograd's
// partitioner recomputes it instead of saving its result); it is counted as
// any call and also attributed to the scope label kRecomputeLabel, the
// recompute phase (python/torchscan_dispatch/_recompute.py). A spec with
// "unseen": "<reason>" stands for a graph the pass could not describe, and so
// does a spec of another version; a spec the reader cannot read is unseen work
// too, never an exception in the workload. Operators that are not dispatcher
// operators are named "higher_order::<name>".
//
// Recording a call follows the fallback's order (call_recording.h): the
// session's custom C++ formula for the operator, else a deferred record
// (Python's custom_mapping and register_flop_formula formulas, evaluated
// after the workload), whose arguments and results are meta tensors of the
// described shapes and dtypes (contiguous: the spec keeps no strides) and
// plain values, with None for every value the spec does not fully describe
// ("other", "unknown_tensor", a tensor without a dtype, a tensor list with
// an unknown tensor); else the formula table.
//
// "inputs" are the graph's tensor inputs that some operator reads, and
// "outputs" its distinct outputs that are not its inputs or views of them:
// each run also records the graph's bytes, its inputs read and outputs
// written once (a lower bound on its fused kernels' traffic) and the
// unfused sum of its calls by the eager bytes rule (an upper bound), NOTE
// [Bytes of compiled graphs] in the .cc.
//
// The tally call is compiled_graph_flops(key, spec, symbols, device_anchor):
// `device_anchor`, the graph's first tensor input, is never read (NOTE [The
// tally call's device anchor] in python/operators/compiled_region_calls.cc).

#ifndef TORCHSCAN_DISPATCH_COMPILED_GRAPH_TALLY_H_
#define TORCHSCAN_DISPATCH_COMPILED_GRAPH_TALLY_H_

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "formulas/operator_call.h"
#include "report/flop_report.h"
#include "torchscan_dispatch/compiled_graph_spec.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/operator_info.h"

namespace torchscan::dispatch {

class CompiledGraphTally {
 public:
  // The spec format this library writes and reads (SPEC_VERSION in
  // python/torchscan_dispatch/_graph_spec.py).
  static constexpr std::int64_t kSpecVersion = kCompiledGraphSpecVersion;
  // The module-scope label of recomputed calls ("recomputed": true): the
  // recompute phase, RECOMPUTE_LABEL in
  // python/torchscan_dispatch/_recompute.py.
  static constexpr char kRecomputeLabel[] = "phase:recompute";

  // A dimension: a constant, or the index of a run-time symbol.
  using Dimension = dispatch::Dimension;
  // A value as the spec describes it; `dimensions` hold the tensor's sizes,
  // an int (one entry) or an int list; `tensor_dimensions` a tensor list.
  // `dtype` and `tensor_dtypes` (one per tensor, or empty) are the dtypes
  // the spec gives, if any.
  struct Value {
    formulas::OperatorValue::Kind kind = formulas::OperatorValue::Kind::kOther;
    std::vector<Dimension> dimensions;
    std::vector<std::optional<std::vector<Dimension>>> tensor_dimensions;
    std::optional<c10::ScalarType> dtype;
    std::vector<std::optional<c10::ScalarType>> tensor_dtypes;
    bool unknown_shape = false;
    bool boolean = false;
    std::vector<bool> booleans;
    double real = 0;
    // A string argument ("str"); its kind is kOther: no formula reads text.
    std::optional<std::string> text;
  };
  // One module of a call's module stack (compiled_graph_spec.h).
  using ModuleEntry = dispatch::ModuleEntry;
  struct Call {
    const OperatorInfo* info = nullptr;
    std::vector<ModuleEntry> modules;
    std::vector<Value> arguments;
    std::vector<Value> results;
    // "form": "decomposed_product": the broadcast multiply Inductor's
    // decomposition made of a matrix product (`info` names the product);
    // its FLOPs are 2 * numel(results[0]) (NOTE in the .cc).
    bool decomposed_product = false;
    // "recomputed": true: forward work the backward graph recomputes.
    bool recomputed = false;
    // Set when no value depends on a symbol: the outcome is computed once.
    std::optional<absl::StatusOr<Count>> constant_outcome;
    // The same for the elementwise convention's rule of an operator without
    // a formula (OperatorInfo::elementwise), used only by sessions counting
    // elementwise work.
    std::optional<absl::StatusOr<Count>> constant_elementwise_outcome;
  };

  // Parses a spec; an error names what is malformed.
  static absl::StatusOr<std::unique_ptr<CompiledGraphTally>> Parse(
      absl::string_view spec);
  // A tally that records its graph as unseen work because its spec could
  // not be read (`error` says why).
  static std::unique_ptr<CompiledGraphTally> Unreadable(
      absl::string_view error);

  // Records every call in `session`, with `symbols` bound to the run's
  // values, each by the session's custom formula, as a deferred call or by
  // the formula table (above). Never throws: a formula that fails or throws
  // is a failed call of its operator. With `root_label` set (the label of the
  // module the compiled call belongs to, "" for a compiled function), each call
  // is also attributed to that module and to its module stack's labels
  // (FlopCounterMode's names; the NOTE in the .cc says how). `device` is
  // where the graph runs, when known: it decides whether float32 products
  // ran as TF32 (NOTE [Precision of compiled calls] in the .cc).
  void Record(CountingSession& session, absl::Span<const std::int64_t> symbols,
              const std::optional<std::string>& root_label,
              std::optional<c10::DeviceType> device = std::nullopt) const;

  const std::string& family() const { return family_; }
  // The graph's name in reports: "compiled graph 0/0 (forward)".
  const std::string& name() const { return name_; }
  std::size_t num_calls() const { return calls_.size(); }
  // One run's bytes, with `symbols` bound (NOTE [Bytes of compiled graphs]
  // in the .cc); nullopt for a graph the spec does not describe.
  std::optional<report::CompiledRegionBytes> RunBytes(
      absl::Span<const std::int64_t> symbols) const;

 private:
  CompiledGraphTally() = default;
  // Parse's work; errors name the field's path in the spec.
  absl::Status Read(absl::string_view spec);
  // The labels of call `index` (its module stack's under `root_label`, when
  // set, and kRecomputeLabel for a recomputed call), interned in `session`'s
  // current module scope (cached per session and scope).
  std::uint32_t ModuleScopeOf(
      CountingSession& session, std::size_t index,
      const std::optional<std::string>& root_label) const;

  std::string family_;
  std::string name_;
  // Set when the pass could not describe the graph: why its FLOPs are
  // missing (recorded as unseen work).
  std::string unseen_;
  std::vector<Call> calls_;
  // The graph's inputs and outputs (the spec's "inputs" and "outputs").
  std::vector<Value> inputs_;
  std::vector<Value> outputs_;
  // RunBytes of a graph whose values use no symbol, computed once.
  std::optional<report::CompiledRegionBytes> constant_bytes_;
  // Whether any call is recomputed (then every run needs ModuleScopeOf).
  bool has_recomputed_ = false;
  mutable absl::Mutex mu_;
  // (session serial, current module scope, root label) -> scope id per call.
  mutable std::map<
      std::tuple<std::uint64_t, std::uint32_t, std::optional<std::string>>,
      std::vector<std::uint32_t>>
      scope_cache_ ABSL_GUARDED_BY(mu_);
};

// The tally for `spec`, parsed once per process and kept by `key` (a hash of
// the spec computed by the pass). Never throws for a malformed spec: that
// tally records its graph as unseen work, naming the error. The spec is
// copied only the first time.
const CompiledGraphTally& TallyFor(std::int64_t key, absl::string_view spec);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_COMPILED_GRAPH_TALLY_H_
