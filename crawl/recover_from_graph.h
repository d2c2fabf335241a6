// Recovering the hyper-parameters a module's graph shows but the module does
// not keep: the one recovery of every front end whose modules lose their
// Python attributes (an ExportedProgram's modules, a traced TorchScript
// module).
//
// What the module did is still there. Its graph holds the operators it ran,
// with their arguments (a Conv2d's stride, padding, dilation and groups are
// those of its convolution operator), and its weight's shape gives its
// channels and kernel. Each front end hands over its graph in the form below
// (python/torchscan_dispatch/_recover_from_graph.py for FX graphs,
// torchscan/script_module_graph.cc for TorchScript graphs); RecoverAttributes
// reads it, per family, with one set of rules:
//
//   {"family": "conv",
//    "operators": [{"name": "aten::convolution",
//                   "arguments": {"input": {"tensor": [1, 3, 8, 8]},
//                                 "weight": {"tensor": [4, 3, 3, 3]},
//                                 "bias": null, "stride": [1, 1],
//                                 "padding": [1, 1], ...}}],
//    "tensors": {"weight": [4, 3, 3, 3]}}
//
// Operator arguments come back as the operator's schema lists them (a pool
// kernel [2, 2], never the int 2 a module may have been built with), so a
// module built as MaxPool2d(2) is described as MaxPool2d((2, 2)): TorchScan
// 0.2 counts those two differently (its quirk 10), and the count of the
// tuple form is the one that matches the work done.
//
// An attribute the graph does not show is named as unrecovered (None being
// a value some attributes have): the front end names it in an
// `unrecovered_module_attribute` diagnostic (docs/cli.md) instead of
// evaluating the module's formulas on a guess.

#ifndef TORCHSCAN_CRAWL_RECOVER_FROM_GRAPH_H_
#define TORCHSCAN_CRAWL_RECOVER_FROM_GRAPH_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "formulas/module_description.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::crawl {

// A value the graph computes while running (neither a constant nor a
// parameter): known to be there, not what it is. {"unknown": true}
struct UnknownValue {
  bool operator==(const UnknownValue&) const = default;
};

// A tensor, with its sizes when the graph knows them (FX graphs carry
// example values; a TorchScript graph knows its parameters'). {"tensor":
// [sizes]} or {"tensor": null}
struct TensorValue {
  std::optional<std::vector<std::int64_t>> sizes;
  bool operator==(const TensorValue&) const = default;
};

// An argument, or a recovered attribute: None (null), a bool, an int, a
// float, a string, a list of ints, a tensor or an unknown value. A list with
// anything but ints in it is an unknown value to the front end.
using GraphValue =
    std::variant<std::monostate, bool, std::int64_t, double, std::string,
                 std::vector<std::int64_t>, TensorValue, UnknownValue>;

}  // namespace torchscan::crawl

// Declared before the tables below read or write a GraphValue.
namespace torchscan::report {

template <>
struct JsonCodec<crawl::GraphValue> {
  static Json Write(const crawl::GraphValue& value);
  static absl::StatusOr<crawl::GraphValue> Read(const JsonValue& node);
};

}  // namespace torchscan::report

namespace torchscan::crawl {

// One operator node, its arguments by schema name (defaults filled in).
struct GraphOperator {
  std::string name;  // "aten::convolution"
  std::vector<std::pair<std::string, GraphValue>> arguments;

  bool operator==(const GraphOperator&) const = default;
  static constexpr auto kFields =
      std::make_tuple(report::Field("name", &GraphOperator::name),
                      report::Field("arguments", &GraphOperator::arguments));
};

struct FamilyNameCodec {
  static report::Json Write(formulas::ModuleFamily family);
  static absl::StatusOr<formulas::ModuleFamily> Read(
      const report::JsonValue& node);
};

// One module call as its graph shows it: the module's family, the operators
// that ran in the call (nested blocks included), in order, and the module's
// parameters and buffers by their names inside it ("weight",
// "out_proj.bias"), each by its sizes.
struct ModuleGraph {
  formulas::ModuleFamily family = formulas::ModuleFamily::kUnsupported;
  std::vector<GraphOperator> operators;
  std::map<std::string, std::vector<std::int64_t>> tensors;

  bool operator==(const ModuleGraph&) const = default;
  static constexpr auto kFields = std::make_tuple(
      report::FieldAs<FamilyNameCodec>("family", &ModuleGraph::family),
      report::Field("operators", &ModuleGraph::operators),
      report::Field("tensors", &ModuleGraph::tensors));
};

// The attributes of a module's family as its graph shows them, by their
// description keys (formulas::ModuleAttribute::key; "out_proj.in_features"
// for a member of a sub-description), in the description's order. None is
// a value (a BatchNorm without weight has no weight numel, its momentum may
// be None); an attribute the graph does not show is None in `values` and
// named in `unrecovered`. Both are empty for a family without
// hyper-parameters.
struct RecoveredAttributes {
  // Bools, ints, floats, strings, lists of ints, or None.
  std::vector<std::pair<std::string, GraphValue>> values;
  std::vector<std::string> unrecovered;

  bool operator==(const RecoveredAttributes&) const = default;
  static constexpr auto kFields = std::make_tuple(
      report::Field("values", &RecoveredAttributes::values),
      report::Field("unrecovered", &RecoveredAttributes::unrecovered));
};

RecoveredAttributes RecoverAttributes(const ModuleGraph& graph);

}  // namespace torchscan::crawl

#endif  // TORCHSCAN_CRAWL_RECOVER_FROM_GRAPH_H_
