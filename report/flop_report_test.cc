#include "report/flop_report.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace torchscan::report {
namespace {

OperatorObservation Counted(std::string name, Count calls, Count flops) {
  OperatorObservation op;
  op.name = std::move(name);
  op.calls = calls;
  op.counted_calls = calls;
  op.flops = flops;
  return op;
}

OperatorObservation Seen(std::string name, Count calls,
                         std::optional<std::string> ignored_reason = {}) {
  OperatorObservation op;
  op.name = std::move(name);
  op.calls = calls;
  op.ignored_reason = std::move(ignored_reason);
  return op;
}

// TorchScan 0.2's measure_flops golden: torch.sin(left @ right) with left
// (2,3), right (3,4).
TEST(FlopReportTest, UncountedOperatorMakesThePartialLowerBound) {
  absl::StatusOr<FlopReport> report = BuildFlopReport(
      "2.13.0", {Seen("aten.sin", 1), Counted("aten.mm", 1, 2 * 2 * 4 * 3)},
      {});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(
      DumpJson(FlopReportToJson(*report)),
      R"({"schema_version":1,"context":{"torch_version":"2.13.0",)"
      R"("method":"torch.utils.flop_counter.FlopCounterMode"},)"
      R"("total":{"status":"partial","value":null,"known_value":48,)"
      R"("unit":"FLOPs","scope":"workload",)"
      R"("method":"torch.utils.flop_counter.FlopCounterMode"},)"
      R"("by_module":{},"by_operator":{"aten.mm":48},)"
      R"("by_precision":{"unknown":48},"ignored_operators":{},)"
      R"("diagnostics":[{"code":"uncounted_operator","severity":"warning",)"
      R"("metric":"flops","operator":"aten.sin","message":)"
      R"("aten.sin was observed 1 time(s), but no FLOP formula is registered."}]})");
}

TEST(FlopReportTest, IgnoredOperatorsKeepTheTotalComplete) {
  absl::StatusOr<FlopReport> report = BuildFlopReport(
      "2.13.0", {Seen("aten.view", 1, "Metadata-only tensor view.")}, {});
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->total.is_complete());
  EXPECT_EQ(std::get<Count>(*report->total.value()), 0);
  ASSERT_EQ(report->ignored_operators.count("aten.view"), 1u);
  EXPECT_EQ(report->ignored_operators.at("aten.view").calls, 1);
  EXPECT_TRUE(report->by_operator.empty());
}

TEST(FlopReportTest, ZeroFromAFormulaIsACompleteZero) {
  absl::StatusOr<FlopReport> report =
      BuildFlopReport("2.13.0", {Counted("aten.sin", 1, 0)}, {});
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->total.is_complete());
  EXPECT_EQ(report->by_operator.at("aten.sin"), 0);
}

TEST(FlopReportTest, FailedFormulaCallsAreDiagnosedNotDropped) {
  OperatorObservation mm = Counted("aten.mm", 3, 100);
  mm.counted_calls = 2;
  mm.failed_calls = 1;
  mm.failure_message = "symbolic shape";
  absl::StatusOr<FlopReport> report = BuildFlopReport("2.13.0", {mm}, {});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->total.status(), MetricStatus::kPartial);
  EXPECT_EQ(report->by_operator.at("aten.mm"), 100);
  ASSERT_EQ(report->diagnostics.size(), 1u);
  EXPECT_EQ(report->diagnostics[0].code, "operator_formula_error");
  EXPECT_NE(report->diagnostics[0].message.find(
                "failed for 1 of them: symbolic shape"),
            std::string::npos);
}

TEST(FlopReportTest, TotalsBeyond64BitsStayExactThroughJson) {
  const Count big = Count(1) << 70;
  absl::StatusOr<FlopReport> report = BuildFlopReport(
      "2.13.0", {Counted("aten.mm", 1, big), Counted("aten.bmm", 1, big)}, {});
  ASSERT_TRUE(report.ok());
  absl::StatusOr<Json> parsed = ParseJson(DumpJson(FlopReportToJson(*report)));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<FlopReport> back = FlopReportFromJson(*parsed);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *report);
  EXPECT_EQ(std::get<Count>(*back->total.value()), 2 * big);
}

TEST(FlopReportTest, OverflowingTotalIsAnError) {
  const Count max = std::numeric_limits<Count>::max();
  absl::StatusOr<FlopReport> report = BuildFlopReport(
      "2.13.0", {Counted("aten.mm", 1, max), Counted("aten.bmm", 1, 1)}, {});
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kOutOfRange);
}

TEST(FlopReportTest, ParsingNamesTheBadField) {
  absl::StatusOr<Json> document = ParseJson(
      R"({"schema_version":1,"context":{"torch_version":"x","method":"m"},)"
      R"("total":{"status":"complete","value":-1,"known_value":-1,"unit":"FLOPs",)"
      R"("scope":"workload","method":"m"},"by_module":{},)"
      R"("by_operator":{"aten.mm":-3},"ignored_operators":{},"diagnostics":[]})");
  ASSERT_TRUE(document.ok());
  absl::StatusOr<FlopReport> report = FlopReportFromJson(*document);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().message(),
            "flop_report.by_operator.aten.mm: must not be negative, got -3");
}

TEST(FlopReportTest, ByPrecisionSumsTheSlotsAndNamesTheRestUnknown) {
  OperatorObservation mm = Counted("aten.mm", 3, 700);
  mm.flops_by_precision[PrecisionIndex(Precision::kBf16)] = 400;
  mm.flops_by_precision[PrecisionIndex(Precision::kFp8)] = 200;
  OperatorObservation bmm = Counted("aten.bmm", 1, 50);
  bmm.flops_by_precision[PrecisionIndex(Precision::kBf16)] = 50;
  absl::StatusOr<FlopReport> report =
      BuildFlopReport("2.13.0", {mm, bmm, Seen("aten.view", 2, "view")}, {});
  ASSERT_TRUE(report.ok()) << report.status();
  // 700 - 400 - 200 of mm were attributed to no precision.
  const std::map<std::string, Count> expected = {
      {"bf16", 450}, {"fp8", 200}, {"unknown", 100}};
  EXPECT_EQ(report->by_precision, expected);
  absl::StatusOr<Json> parsed = ParseJson(DumpJson(FlopReportToJson(*report)));
  ASSERT_TRUE(parsed.ok());
  absl::StatusOr<FlopReport> back = FlopReportFromJson(*parsed);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->by_precision, expected);
}

TEST(FlopReportTest, SlotsBeyondTheOperatorsFlopsAreAnError) {
  OperatorObservation mm = Counted("aten.mm", 1, 10);
  mm.flops_by_precision[PrecisionIndex(Precision::kFp32)] = 11;
  EXPECT_EQ(BuildFlopReport("2.13.0", {mm}, {}).status().code(),
            absl::StatusCode::kInternal);
}

TEST(FlopReportTest, PrecisionNamesRoundTrip) {
  for (int i = 0; i < kPrecisionCount; ++i) {
    const Precision precision = static_cast<Precision>(i);
    EXPECT_EQ(PrecisionFromName(PrecisionName(precision)), precision);
  }
  EXPECT_EQ(PrecisionName(Precision::kTf32), "tf32");
  EXPECT_FALSE(PrecisionFromName("fp4").has_value());
}

constexpr absl::string_view kReportWith48 =
    R"({"schema_version":1,"context":{"torch_version":"x","method":"m"},)"
    R"("total":{"status":"complete","value":48,"known_value":48,)"
    R"("unit":"FLOPs","scope":"workload","method":"m"},"by_module":{},)"
    R"("by_operator":{"aten.mm":48},"ignored_operators":{},"diagnostics":[])";

absl::StatusOr<FlopReport> ReadWith(absl::string_view by_precision) {
  absl::StatusOr<Json> document =
      ParseJson(absl::StrCat(kReportWith48, by_precision, "}"));
  if (!document.ok()) return document.status();
  return FlopReportFromJson(*document);
}

TEST(FlopReportTest, ReadingChecksByPrecision) {
  // A report written before by_precision existed reads with none.
  absl::StatusOr<FlopReport> old = ReadWith("");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_TRUE(old->by_precision.empty());
  absl::StatusOr<FlopReport> split =
      ReadWith(R"(,"by_precision":{"bf16":40,"tf32":8})");
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->by_precision.at("tf32"), 8);
  EXPECT_EQ(ReadWith(R"(,"by_precision":{"bf16":40})").status().message(),
            "flop_report.by_precision: sums to 40, not the total's known "
            "value 48");
  EXPECT_EQ(ReadWith(R"(,"by_precision":{"fp4":48})").status().message(),
            "flop_report.by_precision.fp4: unknown precision 'fp4' (fp64, "
            "fp32, tf32, bf16, fp16, fp8, int8 or unknown)");
}

}  // namespace
}  // namespace torchscan::report
