// The compiled-graph spec's records, each declared once in a field table.
//
// The spec is the JSON description of a compiled graph's operators that the
// Python package's Inductor pass (tally in
// python/torchscan_dispatch/_tally_pass.py) writes as a string constant
// into the graph, and that CompiledGraphTally (compiled_graph_tally.h, which
// documents the format) reads when the compiled code runs. These are its
// records as written, torch-free; the tally turns them into what it records
// (operators, bound shapes, meta tensors).
//
//   CompiledGraphSpec  {"version", "family", "graph", "unseen", "calls",
//                       "inputs", "outputs"}
//   SpecCall           {"op", "overload", "modules", "arguments", "results",
//                       "form", "recomputed"}
//   SpecValue          one kind member, {"tensor": [DIM, ...]} and so on, a
//                      tensor's "dtype" or a tensor list's "dtypes" beside it
//   ModuleEntry        [root, path, type], an array (its own JsonCodec)
//   Dimension          an integer or {"symbol": i} (its own JsonCodec)
//
// The writer is Python's; what is here reads it, and writes the same JSON
// for the round-trip tests (compiled_graph_spec_test.cc).

#ifndef TORCHSCAN_DISPATCH_COMPILED_GRAPH_SPEC_H_
#define TORCHSCAN_DISPATCH_COMPILED_GRAPH_SPEC_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::dispatch {

// The spec format this library writes and reads (SPEC_VERSION in
// python/torchscan_dispatch/_graph_spec.py).
inline constexpr std::int64_t kCompiledGraphSpecVersion = 6;

// A dimension: a constant, or the index of a run-time symbol (the i-th value
// of the SymInt list the tally call passes).
using Dimension = std::variant<std::int64_t, std::size_t>;

// {"symbol": i}: how a Dimension names a symbol.
struct SpecSymbol {
  std::uint64_t symbol = 0;

  bool operator==(const SpecSymbol&) const = default;
  static constexpr auto kFields =
      std::make_tuple(report::Field("symbol", &SpecSymbol::symbol));
};

// One module of a call's module stack: the compiled frame's name for the
// module's root ("L['self']", "G['model']", ...), the path below it, the
// type. Written as the array [root, path, type].
struct ModuleEntry {
  std::string root;
  std::string path;
  std::string type;

  bool operator==(const ModuleEntry&) const = default;
};

// A value as the spec describes it: exactly one kind member is set ("a value
// is an object with one kind"), "dtype" only beside "tensor", "dtypes" only
// beside "tensors" and with one entry per tensor. A dtype is Python's name
// without "torch." ("float32"); the tally resolves it.
struct SpecValue {
  std::optional<std::vector<Dimension>> tensor;
  std::optional<std::string> dtype;
  std::optional<Dimension> int_value;
  std::optional<std::vector<Dimension>> ints;
  std::optional<bool> bool_value;
  std::optional<std::vector<bool>> bools;
  std::optional<double> float_value;
  // A null item is a tensor of unknown shape.
  std::optional<std::vector<std::optional<std::vector<Dimension>>>> tensors;
  std::optional<std::vector<std::optional<std::string>>> dtypes;
  std::optional<std::string> str;
  std::optional<report::JsonNull> none;
  std::optional<report::JsonNull> unknown_tensor;
  std::optional<report::JsonNull> other;

  bool operator==(const SpecValue&) const = default;
  // The rules above, which no single field can check.
  absl::Status Validate(absl::string_view path) const;

  static constexpr auto kFields = std::make_tuple(
      report::Field("tensor", &SpecValue::tensor, report::kOptional),
      report::Field("dtype", &SpecValue::dtype, report::kOptional),
      report::Field("int", &SpecValue::int_value, report::kOptional),
      report::Field("ints", &SpecValue::ints, report::kOptional),
      report::Field("bool", &SpecValue::bool_value, report::kOptional),
      report::Field("bools", &SpecValue::bools, report::kOptional),
      report::Field("float", &SpecValue::float_value, report::kOptional),
      report::Field("tensors", &SpecValue::tensors, report::kOptional),
      report::Field("dtypes", &SpecValue::dtypes, report::kOptional),
      report::Field("str", &SpecValue::str, report::kOptional),
      report::Field("none", &SpecValue::none, report::kOptional),
      report::Field("unknown_tensor", &SpecValue::unknown_tensor,
                    report::kOptional),
      report::Field("other", &SpecValue::other, report::kOptional));
};

// "form": how a call's values relate to its operator.
enum class CallForm {
  // The broadcast multiply Inductor's decomposition made of the matrix
  // product the call names (NOTE [Products that Inductor decomposed] in
  // compiled_graph_tally.cc).
  kDecomposedProduct,
};
absl::Span<const std::pair<CallForm, absl::string_view>> EnumNames(CallForm);

struct SpecCall {
  std::string op;
  std::string overload;
  std::vector<ModuleEntry> modules;
  std::vector<SpecValue> arguments;
  std::vector<SpecValue> results;
  std::optional<CallForm> form;
  // Forward work a compiled backward recomputes.
  bool recomputed = false;

  bool operator==(const SpecCall&) const = default;
  static constexpr auto kFields = std::make_tuple(
      report::Field("op", &SpecCall::op),
      report::Field("overload", &SpecCall::overload),
      report::Field("modules", &SpecCall::modules, report::kOptional),
      report::Field("arguments", &SpecCall::arguments, report::kOptional),
      report::Field("results", &SpecCall::results, report::kOptional),
      report::Field("form", &SpecCall::form, report::kOptional),
      report::Field("recomputed", &SpecCall::recomputed, report::kOptional));
};

struct CompiledGraphSpec {
  // Absent means kCompiledGraphSpecVersion.
  std::optional<std::uint64_t> version;
  // Dynamo's compile id: a forward graph and its backward share it.
  std::string family;
  // Which graph of the family this is: "forward", "backward" or "inference"
  // (AOTAutograd's graphs); absent when the pass cannot tell.
  std::string graph;
  // Set when the pass could not describe the graph: why.
  std::string unseen;
  std::vector<SpecCall> calls;
  // The graph's own inputs (its placeholders) and outputs, described as
  // calls' values are: what its compiled code must read and write at least
  // once (NOTE [Bytes of compiled graphs] in compiled_graph_tally.cc).
  // Version 6 on; empty for a graph without them or an unseen one.
  std::vector<SpecValue> inputs;
  std::vector<SpecValue> outputs;

  bool operator==(const CompiledGraphSpec&) const = default;
  static constexpr auto kFields = std::make_tuple(
      report::Field("version", &CompiledGraphSpec::version, report::kOptional),
      report::Field("family", &CompiledGraphSpec::family, report::kOptional),
      report::Field("graph", &CompiledGraphSpec::graph, report::kOptional),
      report::Field("unseen", &CompiledGraphSpec::unseen, report::kOptional),
      report::Field("calls", &CompiledGraphSpec::calls),
      report::Field("inputs", &CompiledGraphSpec::inputs, report::kOptional),
      report::Field("outputs", &CompiledGraphSpec::outputs, report::kOptional));
};

// Reads spec text; errors name the path ("spec.calls[0].overload: ...").
// A spec of another version than kCompiledGraphSpecVersion is returned with
// only its version set (NOTE [Specs of another version] in the .cc).
absl::StatusOr<CompiledGraphSpec> ReadCompiledGraphSpec(absl::string_view text);

}  // namespace torchscan::dispatch

namespace torchscan::report {

template <>
struct JsonCodec<dispatch::Dimension> {
  static Json Write(const dispatch::Dimension& dimension);
  static absl::StatusOr<dispatch::Dimension> Read(const JsonValue& node);
};

template <>
struct JsonCodec<dispatch::ModuleEntry> {
  static Json Write(const dispatch::ModuleEntry& entry);
  static absl::StatusOr<dispatch::ModuleEntry> Read(const JsonValue& node);
};

}  // namespace torchscan::report

#endif  // TORCHSCAN_DISPATCH_COMPILED_GRAPH_SPEC_H_
