#include "torchscan_dispatch/compiled_graph_spec.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "report/field_table.h"
#include "report/field_table_testing.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan {
namespace dispatch {
namespace {

SpecValue Tensor(std::vector<Dimension> dimensions,
                 std::optional<std::string> dtype = std::nullopt) {
  SpecValue value;
  value.tensor = std::move(dimensions);
  value.dtype = std::move(dtype);
  return value;
}

// One value of each kind; together they set every key of SpecValue's table.
std::vector<SpecValue> ValueSamples() {
  std::vector<SpecValue> values(11);
  values[0] = Tensor({Dimension(std::int64_t{8}), Dimension(std::size_t{0})},
                     "bfloat16");
  values[1].int_value = Dimension(std::size_t{2});
  values[2].ints = {Dimension(std::int64_t{-1}), Dimension(std::int64_t{3})};
  values[3].bool_value = false;
  values[4].bools = {true, false};
  values[5].float_value = -std::numeric_limits<double>::infinity();
  values[6].tensors = {std::vector<Dimension>{Dimension(std::int64_t{2})},
                       std::nullopt};
  values[6].dtypes = {{"float32"}, std::nullopt};
  values[7].str = "floor";
  values[8].none = report::JsonNull{};
  values[9].unknown_tensor = report::JsonNull{};
  values[10].other = report::JsonNull{};
  return values;
}

SpecCall FullCall() {
  SpecCall call;
  call.op = "aten::addmm";
  call.overload = "default";
  call.modules = {{"L['self']", "", "Net"}, {"L['self']", "fc", "Linear"}};
  call.arguments = {Tensor({Dimension(std::int64_t{8})}, "float32"),
                    ValueSamples()[5]};
  call.results = {
      Tensor({Dimension(std::size_t{0}), Dimension(std::int64_t{4})})};
  call.form = CallForm::kDecomposedProduct;
  call.recomputed = true;
  return call;
}

}  // namespace
}  // namespace dispatch

template <>
struct report::FieldTableSamples<dispatch::SpecSymbol> {
  static std::vector<dispatch::SpecSymbol> Get() { return {{0}, {7}}; }
};
template <>
struct report::FieldTableSamples<dispatch::SpecValue> {
  static std::vector<dispatch::SpecValue> Get() {
    return dispatch::ValueSamples();
  }
};
template <>
struct report::FieldTableSamples<dispatch::SpecCall> {
  static std::vector<dispatch::SpecCall> Get() {
    return {dispatch::SpecCall{.op = "aten::mm", .overload = "default"},
            dispatch::FullCall()};
  }
};
template <>
struct report::FieldTableSamples<dispatch::CompiledGraphSpec> {
  static std::vector<dispatch::CompiledGraphSpec> Get() {
    return {dispatch::CompiledGraphSpec{},
            {.version = dispatch::kCompiledGraphSpecVersion,
             .family = "0/1",
             .graph = "backward",
             .unseen = "why",
             .calls = {dispatch::FullCall(), dispatch::FullCall()},
             .inputs = {dispatch::ValueSamples()[0]},
             .outputs = {dispatch::ValueSamples()[6]}}};
  }
};

namespace report {

using SpecRecords =
    ::testing::Types<dispatch::SpecSymbol, dispatch::SpecValue,
                     dispatch::SpecCall, dispatch::CompiledGraphSpec>;
INSTANTIATE_TYPED_TEST_SUITE_P(CompiledGraphSpec, FieldTableRoundTrip,
                               SpecRecords);

}  // namespace report

namespace dispatch {
namespace {

std::string ReadError(absl::string_view text) {
  absl::StatusOr<CompiledGraphSpec> spec = ReadCompiledGraphSpec(text);
  return spec.ok() ? "" : std::string(spec.status().message());
}

// A spec as the Python pass writes it (json.dumps, compact, its key order,
// empty lists included), read field by field.
TEST(CompiledGraphSpecTest, ReadsWhatThePythonPassWrites) {
  absl::StatusOr<CompiledGraphSpec> spec = ReadCompiledGraphSpec(
      R"({"version":6,"family":"0/0","calls":[)"
      R"({"op":"aten::mm","overload":"default","form":"decomposed_product",)"
      R"("modules":[["L['self']","fc","Linear"]],)"
      R"("arguments":[{"tensor":[{"symbol":1},32],"dtype":"float32"},)"
      R"({"float":"-inf"},{"tensors":[[2],null],"dtypes":["int64",null]},)"
      R"({"none":null},{"str":"floor"}],)"
      R"("results":[{"unknown_tensor":null}],"recomputed":true},)"
      R"({"op":"higher_order::flex_attention","overload":"","modules":[],)"
      R"("arguments":[],"results":[{"other":null}]}]})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(std::optional<std::uint64_t>(6), spec->version);
  EXPECT_EQ("0/0", spec->family);
  EXPECT_EQ("", spec->unseen);
  ASSERT_EQ(2u, spec->calls.size());
  const SpecCall& mm = spec->calls[0];
  EXPECT_EQ("aten::mm", mm.op);
  EXPECT_EQ(std::optional<CallForm>(CallForm::kDecomposedProduct), mm.form);
  EXPECT_TRUE(mm.recomputed);
  EXPECT_EQ((std::vector<ModuleEntry>{{"L['self']", "fc", "Linear"}}),
            mm.modules);
  ASSERT_EQ(5u, mm.arguments.size());
  EXPECT_EQ(Tensor({Dimension(std::size_t{1}), Dimension(std::int64_t{32})},
                   "float32"),
            mm.arguments[0]);
  EXPECT_EQ(-std::numeric_limits<double>::infinity(),
            mm.arguments[1].float_value);
  EXPECT_EQ(2u, mm.arguments[2].tensors->size());
  EXPECT_EQ(std::nullopt, (*mm.arguments[2].tensors)[1]);
  EXPECT_TRUE(mm.arguments[3].none.has_value());
  EXPECT_EQ("floor", mm.arguments[4].str);
  EXPECT_TRUE(mm.results[0].unknown_tensor.has_value());
  EXPECT_FALSE(spec->calls[1].form.has_value());
  EXPECT_FALSE(spec->calls[1].recomputed);
  EXPECT_TRUE(spec->calls[1].results[0].other.has_value());
}

// Version 6's members: which graph it is, and its own inputs and outputs,
// described as calls' values are.
TEST(CompiledGraphSpecTest, ReadsTheGraphsKindInputsAndOutputs) {
  absl::StatusOr<CompiledGraphSpec> spec = ReadCompiledGraphSpec(
      R"({"version":6,"family":"0/0","graph":"forward","calls":[],)"
      R"("inputs":[{"tensor":[{"symbol":0},16],"dtype":"float32"},)"
      R"({"tensor":[16,16],"dtype":"bfloat16"}],)"
      R"("outputs":[{"unknown_tensor":null}]})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ("forward", spec->graph);
  EXPECT_EQ(
      (std::vector<SpecValue>{
          Tensor({Dimension(std::size_t{0}), Dimension(std::int64_t{16})},
                 "float32"),
          Tensor({Dimension(std::int64_t{16}), Dimension(std::int64_t{16})},
                 "bfloat16")}),
      spec->inputs);
  ASSERT_EQ(1u, spec->outputs.size());
  EXPECT_TRUE(spec->outputs[0].unknown_tensor.has_value());
  EXPECT_EQ("spec.outputs[0]: a value is an object with one kind",
            ReadError(R"({"calls":[],"outputs":[{}]})"));
}

TEST(CompiledGraphSpecTest, ErrorsNameThePath) {
  const std::string call = R"({"calls":[{"op":"aten::mm","overload":"",)";
  EXPECT_EQ("spec.calls[0].arguments[1].foo: unknown field",
            ReadError(call + R"("arguments":[{"int":1},{"foo":1}]}]})"));
  EXPECT_EQ("spec.calls[0].arguments[0]: a value is an object with one kind",
            ReadError(call + R"("arguments":[{"int":1,"bool":true}]}]})"));
  EXPECT_EQ("spec.calls[0].arguments[0]: a value is an object with one kind",
            ReadError(call + R"("arguments":[{}]}]})"));
  EXPECT_EQ("spec.calls[0].results[0].dtypes: unknown field",
            ReadError(call + R"("results":[{"tensor":[1],"dtypes":[]}]}]})"));
  EXPECT_EQ(
      "spec.calls[0].results[0].tensor[0].symbol: must not be "
      "negative, got -1",
      ReadError(call + R"("results":[{"tensor":[{"symbol":-1}]}]}]})"));
  EXPECT_EQ("spec.calls[0].results[0].none: expected null, got integer",
            ReadError(call + R"("results":[{"none":0}]}]})"));
  EXPECT_EQ("spec.calls[0].modules[0]: a module entry is [root, path, type]",
            ReadError(call + R"("modules":[["L['self']",""]]}]})"));
  EXPECT_EQ("spec.calls[0].modules[0][2]: expected a string, got null",
            ReadError(call + R"("modules":[["L['self']","",null]]}]})"));
  EXPECT_EQ("spec.calls: is missing", ReadError(R"({"family":"0/0"})"));
  EXPECT_EQ("spec.shapes: unknown field",
            ReadError(R"({"calls":[],"shapes":[]})"));
}

// Another version's spec is not read past its version (its other members
// may mean something else).
TEST(CompiledGraphSpecTest, ASpecOfAnotherVersionIsReadNoFurther) {
  absl::StatusOr<CompiledGraphSpec> spec =
      ReadCompiledGraphSpec(R"({"version":7,"calls":{"new":"layout"}})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ((CompiledGraphSpec{.version = 7}), *spec);
  // Version 5, before the graph's inputs and outputs, is another version.
  EXPECT_EQ((CompiledGraphSpec{.version = 5}),
            *ReadCompiledGraphSpec(R"({"version":5,"calls":[]})"));
  EXPECT_EQ("spec.version: must not be negative, got -5",
            ReadError(R"({"version":-5,"calls":[]})"));
}

TEST(CompiledGraphSpecTest, DimensionsAndModuleEntriesHaveTheirOwnForms) {
  EXPECT_EQ(R"([7,{"symbol":3}])",
            report::DumpJson(report::ToJson(std::vector<Dimension>{
                Dimension(std::int64_t{7}), Dimension(std::size_t{3})})));
  EXPECT_EQ(
      R"(["G['m']","a.b","Linear"])",
      report::DumpJson(report::ToJson(ModuleEntry{"G['m']", "a.b", "Linear"})));
}

}  // namespace
}  // namespace dispatch
}  // namespace torchscan
