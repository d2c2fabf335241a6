// CompiledGraphTally: a compiled graph's description, parsed and recorded
// the way the generated code records it. Expected values are hand
// computations.

#include "torchscan_dispatch/compiled_graph_tally.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "torchscan_dispatch/counting_options.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/flop_counting_guard.h"
#include "torchscan_dispatch/testing/guard_reports.h"

namespace torchscan::dispatch {
namespace {

using report::Count;
using testing::FlopsOf;
using testing::MatmulFlops;
using testing::ReportOf;

std::unique_ptr<CompiledGraphTally> Parse(const std::string& spec) {
  absl::StatusOr<std::unique_ptr<CompiledGraphTally>> tally =
      CompiledGraphTally::Parse(spec);
  EXPECT_TRUE(tally.ok()) << tally.status();
  return tally.ok() ? *std::move(tally) : nullptr;
}

// Records `spec` once in a fresh measurement (with `options`) and returns
// its report.
report::FlopReport Recorded(const std::string& spec,
                            std::vector<std::int64_t> symbols = {},
                            std::optional<std::string> root_label = {},
                            CountingOptions options = {}) {
  std::unique_ptr<CompiledGraphTally> tally = Parse(spec);
  FlopCountingGuard guard(std::move(options));
  if (tally != nullptr) {
    tally->Record(*CountingSession::Current(), symbols, root_label);
  }
  return ReportOf(guard);
}

constexpr char kMm[] = R"({"calls":[{"op":"aten::mm","overload":"default",)"
                       R"("arguments":[{"tensor":[8,32]},{"tensor":[32,16]}],)"
                       R"("results":[{"tensor":[8,16]}]}]})";

TEST(CompiledGraphTallyTest, CountsACallWithItsFormula) {
  report::FlopReport report = Recorded(kMm);
  EXPECT_EQ(MatmulFlops(8, 32, 16), FlopsOf(report, "aten.mm"));
  EXPECT_TRUE(report.total.is_complete());
}

TEST(CompiledGraphTallyTest, BindsSymbolicSizesAtRunTime) {
  const std::string spec =
      R"({"calls":[{"op":"aten::mm","overload":"default",)"
      R"("arguments":[{"tensor":[{"symbol":0},32]},{"tensor":[32,16]}],)"
      R"("results":[{"tensor":[{"symbol":0},16]}]}]})";
  EXPECT_EQ(MatmulFlops(5, 32, 16), FlopsOf(Recorded(spec, {5}), "aten.mm"));
  EXPECT_EQ(MatmulFlops(11, 32, 16), FlopsOf(Recorded(spec, {11}), "aten.mm"));
}

TEST(CompiledGraphTallyTest, AMissingSymbolIsAFailedCallNotAGuess) {
  const std::string spec =
      R"({"calls":[{"op":"aten::mm","overload":"default",)"
      R"("arguments":[{"tensor":[{"symbol":3},32]},{"tensor":[32,16]}],)"
      R"("results":[{"tensor":[8,16]}]}]})";
  report::FlopReport report = Recorded(spec, {5});
  EXPECT_FALSE(report.total.is_complete());
  ASSERT_EQ(1u, report.diagnostics.size());
  EXPECT_EQ("operator_formula_error", report.diagnostics[0].code);
}

TEST(CompiledGraphTallyTest, NamesAnOperatorWithoutAFormula) {
  const std::string spec =
      R"({"calls":[{"op":"aten::relu","overload":"default",)"
      R"("arguments":[{"tensor":[8,16]}],"results":[{"tensor":[8,16]}]}]})";
  report::FlopReport report = Recorded(spec);
  EXPECT_FALSE(report.total.is_complete());
  ASSERT_EQ(1u, report.diagnostics.size());
  EXPECT_EQ("uncounted_operator", report.diagnostics[0].code);
  EXPECT_EQ("aten.relu", report.diagnostics[0].subject);
}

TEST(CompiledGraphTallyTest, NamesAnOperatorThisProcessDoesNotKnow) {
  const std::string spec =
      R"({"calls":[{"op":"somelib::fused_thing","overload":"default"}]})";
  report::FlopReport report = Recorded(spec);
  ASSERT_EQ(1u, report.diagnostics.size());
  EXPECT_EQ("somelib.fused_thing", report.diagnostics[0].subject);
}

TEST(CompiledGraphTallyTest, CountsFlexAttentionWithSdpasFormula) {
  const std::string spec =
      R"({"calls":[{"op":"higher_order::flex_attention","overload":"",)"
      R"("arguments":[{"tensor":[1,2,64,16]},{"tensor":[1,2,64,16]},)"
      R"({"tensor":[1,2,64,16]}],"results":[{"tensor":[1,2,64,16]}]}]})";
  // Q @ K^T and scores @ V for each of the 2 heads.
  EXPECT_EQ(2 * (MatmulFlops(64, 16, 64) + MatmulFlops(64, 64, 16)),
            FlopsOf(Recorded(spec), "higher_order.flex_attention"));
}

// Checks that `report` is partial with one diagnostic, unseen work whose
// message names `reason`.
void ExpectOnlyUnseenWork(const report::FlopReport& report,
                          const std::string& reason) {
  EXPECT_FALSE(report.total.is_complete());
  ASSERT_EQ(1u, report.diagnostics.size());
  EXPECT_EQ("unseen_work", report.diagnostics[0].code);
  EXPECT_NE(std::string::npos, report.diagnostics[0].message.find(reason))
      << report.diagnostics[0].message;
}

TEST(CompiledGraphTallyTest, AGraphThePassCouldNotDescribeIsUnseenWork) {
  ExpectOnlyUnseenWork(
      Recorded(R"({"calls":[],"unseen":"it had an operator of a new kind"})"),
      "an operator of a new kind");
}

TEST(CompiledGraphTallyTest, MalformedSpecsAreErrorsThatSayWhere) {
  absl::StatusOr<std::unique_ptr<CompiledGraphTally>> tally =
      CompiledGraphTally::Parse(R"({"calls":[{"overload":"default"}]})");
  ASSERT_FALSE(tally.ok());
  EXPECT_NE(std::string::npos, tally.status().message().find("calls[0]"));
  EXPECT_FALSE(CompiledGraphTally::Parse("not json").ok());
  EXPECT_FALSE(
      CompiledGraphTally::Parse(R"({"calls":[{"op":"aten::mm","overload":"",)"
                                R"("arguments":[{"tensor":[{"sym":0}]}]}]})")
          .ok());
}

// The error of parsing `spec`, "" when it parses.
std::string ParseError(const std::string& spec) {
  absl::StatusOr<std::unique_ptr<CompiledGraphTally>> tally =
      CompiledGraphTally::Parse(spec);
  return tally.ok() ? "" : std::string(tally.status().message());
}

TEST(CompiledGraphTallyTest, AnErrorNamesThePathOfTheBadField) {
  EXPECT_EQ(
      "compiled graph spec.calls[0].arguments[0].tensor[1]: expected an "
      "integer or {\"symbol\": i}, got string",
      ParseError(R"({"calls":[{"op":"aten::mm","overload":"default",)"
                 R"("arguments":[{"tensor":[8,"32"]}]}]})"));
}

// Before the spec was read as int64, a size of 2^63 wrapped to -2^63 and the
// product's FLOPs came out negative.
TEST(CompiledGraphTallyTest, ASizeBeyondInt64IsAnErrorNotAWrappedSize) {
  EXPECT_EQ(
      "compiled graph spec.calls[0].arguments[0].tensor[0]: does not fit in "
      "64 bits",
      ParseError(R"({"calls":[{"op":"aten::mm","overload":"default",)"
                 R"("arguments":[{"tensor":[9223372036854775808,32]},)"
                 R"({"tensor":[32,16]}],"results":[{"tensor":[8,16]}]}]})"));
}

TEST(CompiledGraphTallyTest, AnUnknownFieldIsAnError) {
  EXPECT_EQ("compiled graph spec.calls[0].shapes: unknown field",
            ParseError(R"({"calls":[{"op":"aten::mm","overload":"default",)"
                       R"("shapes":[]}]})"));
}

TEST(CompiledGraphTallyTest, ASpecOfAnotherVersionIsUnseenWorkNotAnError) {
  const std::string spec =
      R"({"version":1,"calls":[{"op":"aten::mm","overload":"default",)"
      R"("arguments":[{"tensor":[8,32]},{"tensor":[32,16]}],)"
      R"("results":[{"tensor":[8,16]}]}]})";
  ExpectOnlyUnseenWork(Recorded(spec), "spec version 1");
}

// Unseen work is one pseudo-operator per name; each graph keeps its reason.
TEST(CompiledGraphTallyTest, TwoGraphsUnseenForDifferentReasonsNameBoth) {
  std::unique_ptr<CompiledGraphTally> first =
      Parse(R"({"calls":[],"unseen":"reason one"})");
  std::unique_ptr<CompiledGraphTally> second =
      Parse(R"({"calls":[],"unseen":"reason two"})");
  ASSERT_NE(nullptr, first);
  ASSERT_NE(nullptr, second);
  FlopCountingGuard guard;
  first->Record(*CountingSession::Current(), {}, std::nullopt);
  second->Record(*CountingSession::Current(), {}, std::nullopt);
  first->Record(*CountingSession::Current(), {}, std::nullopt);
  report::FlopReport report = ReportOf(guard);
  ASSERT_EQ(1u, report.diagnostics.size());
  EXPECT_EQ(
      "inductor.compiled_graph ran 3 time(s) without any operator call: "
      "reason one; reason two",
      report.diagnostics[0].message);
}

TEST(CompiledGraphTallyTest, ASpecOfThisVersionIsRead) {
  const std::string spec =
      R"({"version":6,"calls":[{"op":"aten::mm","overload":"default",)"
      R"("arguments":[{"tensor":[8,32]},{"tensor":[32,16]}],)"
      R"("results":[{"tensor":[8,16]}]}]})";
  report::FlopReport report = Recorded(spec);
  EXPECT_EQ(MatmulFlops(8, 32, 16), FlopsOf(report, "aten.mm"));
  EXPECT_TRUE(report.total.is_complete());
}

// A graph's masked_fill(mask, -inf) or clamp(max=inf): JSON has no
// infinities, so the pass writes them as strings.
TEST(CompiledGraphTallyTest, NonFiniteFloatsAreRead) {
  const std::string spec =
      R"({"calls":[{"op":"aten::masked_fill","overload":"Scalar",)"
      R"("arguments":[{"tensor":[4,4]},{"tensor":[4,4]},{"float":"-inf"}],)"
      R"("results":[{"tensor":[4,4]}]},)"
      R"({"op":"aten::clamp","overload":"default",)"
      R"("arguments":[{"tensor":[4,4]},{"none":null},{"float":"inf"}],)"
      R"("results":[{"tensor":[4,4]}]},)"
      R"({"op":"aten::nan_to_num","overload":"default",)"
      R"("arguments":[{"tensor":[4,4]},{"float":"nan"},{"none":null},)"
      R"({"float":-1.5e300}],"results":[{"tensor":[4,4]}]}]})";
  EXPECT_EQ("", ParseError(spec));
}

TEST(CompiledGraphTallyTest, AFloatStringOtherThanANonFiniteIsAnError) {
  EXPECT_EQ(
      "compiled graph spec.calls[0].arguments[0].float: expected a number, "
      "\"inf\", \"-inf\" or \"nan\", got string",
      ParseError(R"({"calls":[{"op":"aten::add","overload":"Scalar",)"
                 R"("arguments":[{"float":"Infinity"}]}]})"));
}

// Inductor rewrote addmm([1,8] x [8,4]) into a multiply of 8 * 4 elements.
TEST(CompiledGraphTallyTest, CountsADecomposedProductAsTheProduct) {
  const std::string spec =
      R"({"calls":[{"op":"aten::addmm","overload":"default",)"
      R"("form":"decomposed_product",)"
      R"("arguments":[{"tensor":[8,1]},{"tensor":[8,4]}],)"
      R"("results":[{"tensor":[{"symbol":0},4]}]}]})";
  report::FlopReport report = Recorded(spec, {8});
  EXPECT_EQ(MatmulFlops(1, 8, 4), FlopsOf(report, "aten.addmm"));
  EXPECT_TRUE(report.total.is_complete());
}

TEST(CompiledGraphTallyTest, AnUnknownFormIsAnError) {
  EXPECT_EQ(
      "compiled graph spec.calls[0].form: expected \"decomposed_product\", "
      "got string",
      ParseError(R"({"calls":[{"op":"aten::mm","overload":"default",)"
                 R"("form":"fused"}]})"));
}

// TallyFor runs inside the user's compiled code: a spec it cannot read is
// unseen work that names the error, never an exception.
TEST(CompiledGraphTallyTest, AnUnreadableSpecIsUnseenWorkNotAnException) {
  const std::string spec = R"({"calls":[{"op":"aten::mm","overload":1}]})";
  FlopCountingGuard guard;
  const CompiledGraphTally& tally = TallyFor(/*key=*/7, spec);
  tally.Record(*CountingSession::Current(), {}, std::nullopt);
  ExpectOnlyUnseenWork(ReportOf(guard), "spec.calls[0].overload");
}

TEST(CompiledGraphTallyTest, TwoSpecsThatShareAKeyEachGetTheirOwnTally) {
  const CompiledGraphTally& mm = TallyFor(/*key=*/11, kMm);
  const CompiledGraphTally& empty = TallyFor(/*key=*/11, R"({"calls":[]})");
  EXPECT_EQ(1u, mm.num_calls());
  EXPECT_EQ(0u, empty.num_calls());
  EXPECT_EQ(&mm, &TallyFor(/*key=*/11, kMm));
}

constexpr char kModuleCall[] =
    R"({"calls":[{"op":"aten::mm","overload":"default",)"
    R"("modules":[[ROOT]],)"
    R"("arguments":[{"tensor":[8,32]},{"tensor":[32,16]}],)"
    R"("results":[{"tensor":[8,16]}]}]})";

std::string WithModules(const std::string& modules) {
  std::string spec = kModuleCall;
  spec.replace(spec.find("[ROOT]"), 6, modules);
  return spec;
}

TEST(CompiledGraphTallyTest, AttributesToTheCompiledModuleAndItsChildren) {
  report::FlopReport report =
      Recorded(WithModules(R"(["L['self']","fc","Linear"])"), {}, "Net");
  const Count flops = MatmulFlops(8, 32, 16);
  EXPECT_EQ((std::map<std::string, Count>{{"Net", flops}, {"Net.fc", flops}}),
            report.by_module);
}

TEST(CompiledGraphTallyTest, NamesAModuleAFunctionReachedByItsType) {
  report::FlopReport report =
      Recorded(WithModules(R"(["G['model']","","Net"],)"
                           R"(["G['model']","fc","Linear"])"),
               {}, "");
  const Count flops = MatmulFlops(8, 32, 16);
  EXPECT_EQ((std::map<std::string, Count>{{"Net", flops}, {"Net.fc", flops}}),
            report.by_module);
}

TEST(CompiledGraphTallyTest, WithoutModuleTrackingThereAreNoModules) {
  EXPECT_TRUE(Recorded(WithModules(R"(["L['self']","fc","Linear"])"))
                  .by_module.empty());
}

// --- Spec version 5: recomputed calls.

// A mm the backward graph recomputes, beside one it runs for the gradient.
constexpr char kRecomputedMm[] =
    R"({"calls":[{"op":"aten::mm","overload":"default","recomputed":true,)"
    R"("modules":[["L['self']","fc","Linear"]],)"
    R"("arguments":[{"tensor":[8,32]},{"tensor":[32,16]}],)"
    R"("results":[{"tensor":[8,16]}]},)"
    R"({"op":"aten::mm","overload":"default","recomputed":false,)"
    R"("arguments":[{"tensor":[16,8]},{"tensor":[8,4]}],)"
    R"("results":[{"tensor":[16,4]}]}]})";

TEST(CompiledGraphTallyTest, ARecomputedCallCountsInTheRecomputePhase) {
  report::FlopReport report = Recorded(kRecomputedMm);
  const Count recomputed = MatmulFlops(8, 32, 16);
  EXPECT_EQ(recomputed + MatmulFlops(16, 8, 4), FlopsOf(report, "aten.mm"));
  // Without module tracking the recompute label is the only one.
  EXPECT_EQ((std::map<std::string, Count>{
                {CompiledGraphTally::kRecomputeLabel, recomputed}}),
            report.by_module);
}

TEST(CompiledGraphTallyTest, ARecomputedCallKeepsItsModules) {
  report::FlopReport report = Recorded(kRecomputedMm, {}, "Net");
  const Count recomputed = MatmulFlops(8, 32, 16);
  EXPECT_EQ((std::map<std::string, Count>{
                {"Net", recomputed + MatmulFlops(16, 8, 4)},
                {"Net.fc", recomputed},
                {CompiledGraphTally::kRecomputeLabel, recomputed}}),
            report.by_module);
}

TEST(CompiledGraphTallyTest, RecomputedMustBeABoolean) {
  EXPECT_EQ(
      "compiled graph spec.calls[0].recomputed: expected a boolean, got "
      "integer",
      ParseError(R"({"calls":[{"op":"aten::mm","overload":"default",)"
                 R"("recomputed":1}]})"));
}

// --- Spec version 3: dtypes, and the session's own formulas.

TEST(CompiledGraphTallyTest, ReadsTheDtypesOfTensorsAndTensorLists) {
  EXPECT_EQ("", ParseError(R"({"calls":[{"op":"aten::cat","overload":"",)"
                           R"("arguments":[{"tensors":[[2,3],null],)"
                           R"("dtypes":["bfloat16",null]},{"int":0}],)"
                           R"("results":[{"tensor":[4,3],)"
                           R"("dtype":"bfloat16"}]}]})"));
}

TEST(CompiledGraphTallyTest, AnUnknownDtypeIsAnErrorThatSaysWhere) {
  EXPECT_EQ(
      "compiled graph spec.calls[0].arguments[0].dtype: unknown dtype "
      "'float99'",
      ParseError(R"({"calls":[{"op":"aten::sin","overload":"default",)"
                 R"("arguments":[{"tensor":[2],"dtype":"float99"}]}]})"));
}

TEST(CompiledGraphTallyTest, ADtypeBesideAValueOtherThanATensorIsAnError) {
  EXPECT_EQ("compiled graph spec.calls[0].arguments[0].dtype: unknown field",
            ParseError(R"({"calls":[{"op":"aten::sin","overload":"default",)"
                       R"("arguments":[{"int":2,"dtype":"int64"}]}]})"));
}

TEST(CompiledGraphTallyTest, ATensorListHasOneDtypePerTensor) {
  EXPECT_EQ(
      "compiled graph spec.calls[0].arguments[0].dtypes: has 1 dtypes for 2 "
      "tensors",
      ParseError(R"({"calls":[{"op":"aten::cat","overload":"",)"
                 R"("arguments":[{"tensors":[[2],[3]],)"
                 R"("dtypes":["float32"]}]}]})"));
}

// aten.sum.dim_IntList(self, dim, keepdim, dtype) of a [n, 3] half tensor in
// module Net.fc: the dtype argument is "other".
constexpr char kSum[] =
    R"({"version":6,"calls":[{"op":"aten::sum","overload":"dim_IntList",)"
    R"("modules":[["L['self']","fc","Linear"]],)"
    R"("arguments":[{"tensor":[{"symbol":0},3],"dtype":"float16"},)"
    R"({"ints":[1]},{"bool":false},{"other":null}],)"
    R"("results":[{"tensor":[{"symbol":0}],"dtype":"float16"}]}]})";

CountingOptions Deferring(const std::string& packet) {
  CountingOptions options;
  options.deferred_packets.push_back(packet);
  return options;
}

TEST(CompiledGraphTallyTest, ADeferredCallGetsMetaValuesRebuiltFromTheSpec) {
  std::unique_ptr<CompiledGraphTally> tally = Parse(kSum);
  ASSERT_NE(nullptr, tally);
  FlopCountingGuard guard(Deferring("aten.sum"));
  CountingSession& session = *CountingSession::Current();
  tally->Record(session, {5}, std::nullopt);
  std::vector<DeferredCall> calls = session.TakeDeferredCalls();
  ASSERT_EQ(1u, calls.size());
  const DeferredCall& call = calls[0];
  EXPECT_EQ("aten::sum", OperatorInfoById(call.operator_id).packet);
  ASSERT_EQ(4u, call.arguments.size());
  const at::Tensor self = call.arguments[0].toTensor();
  EXPECT_TRUE(self.is_meta());
  EXPECT_EQ((std::vector<std::int64_t>{5, 3}), self.sizes().vec());
  EXPECT_EQ(at::kHalf, self.scalar_type());
  EXPECT_EQ((std::vector<std::int64_t>{1}), call.arguments[1].toIntVector());
  EXPECT_FALSE(call.arguments[2].toBool());
  EXPECT_TRUE(call.arguments[3].isNone());
  ASSERT_EQ(1u, call.results.size());
  EXPECT_EQ((std::vector<std::int64_t>{5}),
            call.results[0].toTensor().sizes().vec());
}

TEST(CompiledGraphTallyTest, ATensorTheSpecDoesNotFullyDescribeIsNone) {
  const std::string spec =
      R"({"calls":[{"op":"aten::sin","overload":"default",)"
      R"("arguments":[{"unknown_tensor":null}],)"
      R"("results":[{"tensor":[4]}]}]})";
  std::unique_ptr<CompiledGraphTally> tally = Parse(spec);
  ASSERT_NE(nullptr, tally);
  FlopCountingGuard guard(Deferring("aten::sin"));
  CountingSession& session = *CountingSession::Current();
  tally->Record(session, {}, std::nullopt);
  std::vector<DeferredCall> calls = session.TakeDeferredCalls();
  ASSERT_EQ(1u, calls.size());
  EXPECT_TRUE(calls[0].arguments[0].isNone());
  EXPECT_TRUE(calls[0].results[0].isNone());  // no dtype
}

TEST(CompiledGraphTallyTest, AStringArgumentReachesADeferredCallAsText) {
  // A collective's group name, or div's rounding mode: kept as text.
  const std::string spec =
      R"({"calls":[{"op":"aten::div","overload":"Tensor_mode",)"
      R"("arguments":[{"tensor":[4],"dtype":"float32"},)"
      R"({"tensor":[4],"dtype":"float32"},{"str":"floor"}],)"
      R"("results":[{"tensor":[4],"dtype":"float32"}]}]})";
  std::unique_ptr<CompiledGraphTally> tally = Parse(spec);
  ASSERT_NE(nullptr, tally);
  FlopCountingGuard guard(Deferring("aten::div"));
  CountingSession& session = *CountingSession::Current();
  tally->Record(session, {}, std::nullopt);
  std::vector<DeferredCall> calls = session.TakeDeferredCalls();
  ASSERT_EQ(1u, calls.size());
  ASSERT_EQ(3u, calls[0].arguments.size());
  EXPECT_EQ("floor", calls[0].arguments[2].toStringRef());
}

TEST(CompiledGraphTallyTest, AStringThatIsNotTextIsAnError) {
  const std::string spec =
      R"({"calls":[{"op":"aten::div","overload":"Tensor_mode",)"
      R"("arguments":[{"str":3}],"results":[]}]})";
  absl::StatusOr<std::unique_ptr<CompiledGraphTally>> tally =
      CompiledGraphTally::Parse(spec);
  EXPECT_FALSE(tally.ok());
}

TEST(CompiledGraphTallyTest, AResolvedDeferredCallCountsInItsModuleScope) {
  std::unique_ptr<CompiledGraphTally> tally = Parse(kSum);
  ASSERT_NE(nullptr, tally);
  FlopCountingGuard guard(Deferring("aten.sum"));
  CountingSession& session = *CountingSession::Current();
  tally->Record(session, {5}, "Net");
  for (const DeferredCall& call : session.TakeDeferredCalls()) {
    session.ResolveDeferred(call, Count{15});
  }
  report::FlopReport report = ReportOf(guard);
  EXPECT_EQ(15, FlopsOf(report, "aten.sum"));
  EXPECT_EQ((std::map<std::string, Count>{{"Net", 15}, {"Net.fc", 15}}),
            report.by_module);
  EXPECT_TRUE(report.total.is_complete());
}

CountingOptions WithCustomFormula(const std::string& packet,
                                  CustomFormula formula) {
  CountingOptions options;
  options.custom_formulas.emplace_back(packet, std::move(formula));
  return options;
}

TEST(CompiledGraphTallyTest, ACustomFormulaReplacesTheBuiltInOne) {
  // m * n: one FLOP per element of the [8, 16] result.
  report::FlopReport report = Recorded(
      kMm, {}, {},
      WithCustomFormula(
          "aten::mm",
          [](const formulas::OperatorCall& call) -> absl::StatusOr<Count> {
            const formulas::Shape& out = call.results[0].shape;
            return out[0] * out[1];
          }));
  EXPECT_EQ(8 * 16, FlopsOf(report, "aten.mm"));
  EXPECT_TRUE(report.total.is_complete());
}

TEST(CompiledGraphTallyTest, ACustomFormulaThatThrowsIsAFailedCallNamed) {
  report::FlopReport report =
      Recorded(kMm, {}, {},
               WithCustomFormula(
                   "aten::mm",
                   [](const formulas::OperatorCall&) -> absl::StatusOr<Count> {
                     throw std::runtime_error("no formula today");
                   }));
  EXPECT_FALSE(report.total.is_complete());
  ASSERT_EQ(1u, report.diagnostics.size());
  EXPECT_EQ("operator_formula_error", report.diagnostics[0].code);
  EXPECT_EQ("aten.mm", report.diagnostics[0].subject);
  EXPECT_NE(std::string::npos,
            report.diagnostics[0].message.find("no formula today"));
}

// The session's own formula would get the broadcast multiply's values, not
// the product's: the call fails, named, instead of a wrong count.
TEST(CompiledGraphTallyTest, ADeferredDecomposedProductIsAFailedCall) {
  const std::string spec =
      R"({"calls":[{"op":"aten::addmm","overload":"default",)"
      R"("form":"decomposed_product",)"
      R"("arguments":[{"tensor":[8,1],"dtype":"float32"},)"
      R"({"tensor":[8,4],"dtype":"float32"}],)"
      R"("results":[{"tensor":[8,4],"dtype":"float32"}]}]})";
  report::FlopReport report = Recorded(spec, {}, {}, Deferring("aten::addmm"));
  EXPECT_FALSE(report.total.is_complete());
  ASSERT_EQ(1u, report.diagnostics.size());
  EXPECT_EQ("operator_formula_error", report.diagnostics[0].code);
  EXPECT_EQ("aten.addmm", report.diagnostics[0].subject);
}

// relu(a @ b) of float32 [8, 32] @ [32, 16], as the pass describes it with
// the graph's inputs and outputs (symbol 0, when used, is 8).
std::string MmReluSpec(const std::string& rows) {
  const std::string a = R"({"tensor":[)" + rows + R"(,32],"dtype":"float32"})";
  const std::string b = R"({"tensor":[32,16],"dtype":"float32"})";
  const std::string c = R"({"tensor":[)" + rows + R"(,16],"dtype":"float32"})";
  return R"({"version":6,"family":"0/0","graph":"forward","calls":[)"
         R"({"op":"aten::mm","overload":"default","arguments":[)" +
         a + "," + b + R"(],"results":[)" + c + "]}," +
         R"({"op":"aten::relu","overload":"default","arguments":[)" + c +
         R"(],"results":[)" + c + "]}]," + R"("inputs":[)" + a + "," + b +
         R"(],"outputs":[)" + c + "]}";
}

// Hand computation: a is 8*32*4 = 1024 bytes, b 32*16*4 = 2048, the
// product and the relu 8*16*4 = 512 each.
constexpr Count kMmReluLower = 1024 + 2048 + 512;
constexpr Count kMmReluUpper = (1024 + 2048 + 512) + (512 + 512);

TEST(CompiledGraphTallyTest, AGraphsLowerBoundIsItsInputsAndOutputs) {
  report::FlopReport report = Recorded(MmReluSpec("8"));
  ASSERT_TRUE(report.bytes.has_value());
  EXPECT_EQ((report::OperatorBytes{1024 + 2048, 512}),
            report.bytes->by_operator.at("inductor.compiled_graph"));
  EXPECT_FALSE(report.bytes->total.is_complete());
  EXPECT_EQ(report::MetricValue(kMmReluLower),
            *report.bytes->total.known_value());
  // The compiled calls record FLOPs only.
  EXPECT_EQ(1u, report.bytes->by_operator.size());
}

TEST(CompiledGraphTallyTest, AGraphsUpperBoundIsItsUnfusedSum) {
  report::FlopReport report = Recorded(MmReluSpec("8"));
  ASSERT_TRUE(report.bytes->upper_bound.has_value());
  EXPECT_TRUE(report.bytes->upper_bound->is_complete());
  EXPECT_EQ(report::MetricValue(kMmReluUpper),
            *report.bytes->upper_bound->value());
}

TEST(CompiledGraphTallyTest, OneDiagnosticPerGraphNamesItsBounds) {
  std::unique_ptr<CompiledGraphTally> tally = Parse(MmReluSpec("8"));
  ASSERT_NE(nullptr, tally);
  FlopCountingGuard guard;
  tally->Record(*CountingSession::Current(), {}, std::nullopt);
  tally->Record(*CountingSession::Current(), {}, std::nullopt);
  report::FlopReport report = ReportOf(guard);
  ASSERT_EQ(1u, report.bytes->diagnostics.size());
  const report::Diagnostic& diagnostic = report.bytes->diagnostics[0];
  EXPECT_EQ("compiled_region_bytes", diagnostic.code);
  EXPECT_EQ("inductor.compiled_graph", diagnostic.subject);
  EXPECT_EQ(
      "compiled graph 0/0 (forward) ran 2 time(s): its fused kernels' bytes "
      "are not known; its own inputs read and outputs written move 7168 "
      "bytes (the lower bound, counted under inductor.compiled_graph); the "
      "unfused sum of its operator calls is 9216 bytes (the upper bound, in "
      "bytes.upper_bound)",
      diagnostic.message);
  EXPECT_EQ(report::MetricValue(2 * kMmReluUpper),
            *report.bytes->upper_bound->value());
}

TEST(CompiledGraphTallyTest, BindsSymbolicSizesInTheBounds) {
  report::FlopReport report = Recorded(MmReluSpec(R"({"symbol":0})"), {8});
  EXPECT_EQ(report::MetricValue(kMmReluLower),
            *report.bytes->total.known_value());
  EXPECT_EQ(report::MetricValue(kMmReluUpper),
            *report.bytes->upper_bound->value());
}

// A call whose bytes cannot be read leaves the upper bound partial, named.
TEST(CompiledGraphTallyTest, ACallWithoutASchemaLeavesTheUpperBoundPartial) {
  report::FlopReport report =
      Recorded(R"({"version":6,"calls":[{"op":"higher_order::flex_attention",)"
               R"("overload":"","arguments":[],"results":[]},)"
               R"({"op":"aten::relu","overload":"default",)"
               R"("arguments":[{"tensor":[4],"dtype":"float32"}],)"
               R"("results":[{"tensor":[4],"dtype":"float32"}]}],)"
               R"("inputs":[{"tensor":[4],"dtype":"float32"}],"outputs":[]})");
  ASSERT_TRUE(report.bytes->upper_bound.has_value());
  EXPECT_FALSE(report.bytes->upper_bound->is_complete());
  // The relu's 16 bytes read and 16 written are known.
  EXPECT_EQ(report::MetricValue(Count(16 + 16)),
            *report.bytes->upper_bound->known_value());
  EXPECT_NE(std::string::npos,
            report.bytes->diagnostics[0].message.find(
                "leaving out 1 call(s) whose bytes are not known "
                "(higher_order.flex_attention: an operator without a "
                "schema)"))
      << report.bytes->diagnostics[0].message;
}

// The lower bound keeps the tally's module attribution: the compiled module.
TEST(CompiledGraphTallyTest, TheLowerBoundBelongsToTheCompiledModule) {
  report::FlopReport report = Recorded(MmReluSpec("8"), {}, std::string("Net"));
  EXPECT_EQ(kMmReluLower, report.bytes->by_module.at("Net"));
}

// A nested measurement's graphs reach the enclosing one when it ends.
TEST(CompiledGraphTallyTest, ANestedMeasurementsGraphBoundsReachTheOuterOne) {
  std::unique_ptr<CompiledGraphTally> tally = Parse(MmReluSpec("8"));
  ASSERT_NE(nullptr, tally);
  FlopCountingGuard outer;
  {
    FlopCountingGuard inner;
    tally->Record(*CountingSession::Current(), {}, std::nullopt);
  }
  report::FlopReport report = ReportOf(outer);
  EXPECT_EQ(report::MetricValue(kMmReluLower),
            *report.bytes->total.known_value());
  EXPECT_EQ(report::MetricValue(kMmReluUpper),
            *report.bytes->upper_bound->value());
  ASSERT_EQ(1u, report.bytes->diagnostics.size());
  EXPECT_EQ("compiled_region_bytes", report.bytes->diagnostics[0].code);
}

}  // namespace
}  // namespace torchscan::dispatch
