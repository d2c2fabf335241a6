#include "report/flop_report.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "report/field_table_testing.h"
#include "report/test_support.h"

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
      R"("by_precision":{"unknown":48},)"
      R"("by_operator_precision":{"aten.mm":{"unknown":48}},)"
      R"("ignored_operators":{},)"
      R"("diagnostics":[{"code":"uncounted_operator","severity":"warning",)"
      R"("metric":"flops","operator":"aten.sin","message":)"
      R"("aten.sin was observed 1 time(s), but no FLOP formula is registered."}],)"
      R"("mask_aware":{"status":"partial","value":null,"known_value":48,)"
      R"("unit":"FLOPs","scope":"workload","method":)"
      R"("torch.utils.flop_counter.FlopCounterMode, attention over allowed )"
      R"((query, key) pairs","by_module":{},"diagnostics":[]},)"
      R"("bytes":{"status":"complete","value":0,"known_value":0,)"
      R"("unit":"bytes","scope":"workload","method":"each distinct input )"
      R"(tensor read once, each output written once; views and metadata )"
      R"(move nothing","read":0,"written":0,"by_operator":{},)"
      R"("by_module":{},"diagnostics":[]}})");
}

// Bytes: the observations' read and written bytes summed; an operator
// whose calls' bytes were not all known is named and makes them partial.
TEST(FlopReportTest, BytesSumTheOperatorsAndNameUnknownOnes) {
  OperatorObservation mm = Counted("aten.mm", 2, 96);
  mm.bytes_read = 2 * 224;
  mm.bytes_written = 2 * 48;
  OperatorObservation add = Seen("aten.add", 1);
  add.bytes_read = 64;
  add.bytes_written = 64;
  absl::StatusOr<FlopReport> report =
      BuildFlopReport("2.13.0", {mm, add, Seen("aten.view", 3, "a view")}, {},
                      {}, {{"Model", 448 + 96 + 128}});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->bytes.has_value());
  EXPECT_EQ(report->bytes->total,
            MetricResult::Complete(Count(448 + 96 + 128), BytesMovedKind()));
  EXPECT_EQ(report->bytes->read, 448 + 64);
  EXPECT_EQ(report->bytes->written, 96 + 64);
  EXPECT_EQ(report->bytes->by_operator.at("aten.mm"), (OperatorBytes{448, 96}));
  EXPECT_FALSE(report->bytes->by_operator.contains("aten.view"));
  EXPECT_EQ(report->bytes->by_module.at("Model"), 448 + 96 + 128);
  absl::StatusOr<FlopReport> again =
      FlopReportFromJson(FlopReportToJson(*report));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *report);

  OperatorObservation sparse = Seen("aten.add", 2);
  sparse.bytes_read = 64;
  sparse.bytes_written = 64;
  sparse.bytes_unknown_calls = 1;
  sparse.bytes_unknown_message = "a sparse tensor";
  report = BuildFlopReport("2.13.0", {mm, sparse}, {});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->bytes->total,
            MetricResult::Partial(Count(448 + 96 + 128), BytesMovedKind()));
  ASSERT_EQ(report->bytes->diagnostics.size(), 1u);
  EXPECT_EQ(report->bytes->diagnostics[0].code, kBytesNotKnown);
  EXPECT_EQ(report->bytes->diagnostics[0].subject, "aten.add");
  EXPECT_NE(report->bytes->diagnostics[0].message.find(
                "ran 1 time(s) with bytes that are not known (a sparse "
                "tensor)"),
            std::string::npos);
  // The FLOP diagnostics are their own.
  EXPECT_EQ(report->diagnostics.size(), 1u);
  EXPECT_EQ(report->diagnostics[0].code, kUncountedOperator);
}

// Reports written before bytes existed still read; a file whose read +
// written is not its value is refused naming the field.
TEST(FlopReportTest, ReadingBytes) {
  OperatorObservation mm = Counted("aten.mm", 1, 48);
  mm.bytes_read = 224;
  mm.bytes_written = 48;
  absl::StatusOr<FlopReport> report = BuildFlopReport("2.13.0", {mm}, {});
  ASSERT_TRUE(report.ok());
  Json json = FlopReportToJson(*report);
  Json old = json;
  old.erase("bytes");
  absl::StatusOr<FlopReport> read = FlopReportFromJson(old);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->bytes.has_value());
  json["bytes"]["written"] = 49;
  read = FlopReportFromJson(json);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("flop_report.bytes"),
            std::string::npos)
      << read.status();
  EXPECT_NE(read.status().message().find("read + written (273)"),
            std::string::npos)
      << read.status();
}

// Causal attention B=2, H=8, L=S=64, E=32 (the issue's example): executed
// 2 * 2*B*H*L*S*E; its mask allows 64*65/2 of 4096 pairs per head.
// A compiled graph's lower bound is in the known bytes (as the
// kCompiledGraphOperator observation the session records); the upper bound
// replaces it by the graph's unfused sum: eager 272 + lower 3072 known,
// upper 272 + 5120.
TEST(FlopReportTest, CompiledGraphsGiveOneDiagnosticEachAndTheUpperBound) {
  OperatorObservation mm = Counted("aten.mm", 1, 48);
  mm.bytes_read = 224;
  mm.bytes_written = 48;
  OperatorObservation graph;
  graph.name = std::string(kCompiledGraphOperator);
  graph.bytes_read = 2048;
  graph.bytes_written = 1024;
  const CompiledRegionBytes region{.name = "compiled graph 0/0 (inference)",
                                   .runs = 1,
                                   .inputs_read = 2048,
                                   .outputs_written = 1024,
                                   .unfused = 5120};
  absl::StatusOr<FlopReport> report =
      BuildFlopReport("2.13.0", {mm, graph}, {}, {}, {}, {region});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->bytes->total,
            MetricResult::Partial(Count(272 + 3072), BytesMovedKind()));
  EXPECT_EQ(report->bytes->upper_bound,
            MetricResult::Complete(Count(272 + 5120), UnfusedBytesKind()));
  EXPECT_EQ(report->bytes->by_operator.at("inductor.compiled_graph"),
            (OperatorBytes{2048, 1024}));
  ASSERT_EQ(report->bytes->diagnostics.size(), 1u);
  EXPECT_EQ(report->bytes->diagnostics[0].code, kCompiledRegionBytes);
  EXPECT_EQ(report->bytes->diagnostics[0].subject, "inductor.compiled_graph");
  // The FLOPs are not concerned.
  EXPECT_TRUE(report->total.is_complete());

  // Unknown eager bytes leave the upper bound partial too.
  mm.bytes_unknown_calls = 1;
  mm.bytes_unknown_message = "a sparse tensor";
  report = BuildFlopReport("2.13.0", {mm, graph}, {}, {}, {}, {region});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->bytes->upper_bound,
            MetricResult::Partial(Count(272 + 5120), UnfusedBytesKind()));
}

// Eager reports have no upper bound (their JSON unchanged); one that has
// it round-trips.
TEST(FlopReportTest, TheUpperBoundIsWrittenOnlyWhenSetAndReadBack) {
  OperatorObservation mm = Counted("aten.mm", 1, 48);
  mm.bytes_read = 224;
  mm.bytes_written = 48;
  absl::StatusOr<FlopReport> report = BuildFlopReport("2.13.0", {mm}, {});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->bytes->upper_bound.has_value());
  EXPECT_FALSE(FlopReportToJson(*report)["bytes"].contains("upper_bound"));

  report =
      BuildFlopReport("2.13.0", {mm}, {}, {}, {},
                      {CompiledRegionBytes{.name = "compiled graph",
                                           .runs = 2,
                                           .unfused = 10,
                                           .unfused_unknown_calls = 1,
                                           .unfused_unknown_message = "why"}});
  ASSERT_TRUE(report.ok()) << report.status();
  const Json json = FlopReportToJson(*report);
  EXPECT_EQ(DumpJson(json["bytes"]["upper_bound"]),
            absl::StrCat(R"({"status":"partial","value":null,)",
                         R"("known_value":282,"unit":"bytes",)",
                         R"("scope":"workload","method":")",
                         kUnfusedBytesMethod, R"("})"));
  absl::StatusOr<FlopReport> again = FlopReportFromJson(json);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *report);
}

TEST(FlopReportTest, MaskAwareCountIsTheTotalLessMaskExclusions) {
  const Count executed = Count(2) * 2 * 2 * 8 * 64 * 64 * 32;
  const Count allowed = executed / 4096 * 2080;
  OperatorObservation attention =
      Counted("aten._scaled_dot_product_flash_attention_for_cpu", 1, executed);
  attention.mask_excluded_flops = executed - allowed;
  absl::StatusOr<FlopReport> report = BuildFlopReport(
      "2.13.0", {attention, Counted("aten.mm", 1, 48)},
      {{"Model", executed + 48}}, {{"Model", executed - allowed}});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->mask_aware.has_value());
  EXPECT_EQ(report->mask_aware->total,
            MetricResult::Complete(Count(4259840 + 48), MaskAwareFlopsKind()));
  EXPECT_EQ(report->mask_aware->by_module.at("Model"), 4259840 + 48);
  EXPECT_EQ(report->total,
            MetricResult::Complete(executed + 48, OperatorFlopsKind()));
  absl::StatusOr<FlopReport> again =
      FlopReportFromJson(FlopReportToJson(*report));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *report);
}

// A call whose mask was not read leaves its whole count out: the mask-aware
// count is a partial lower bound, and the call is named.
TEST(FlopReportTest, UnreadMaskMakesTheMaskAwareCountPartial) {
  OperatorObservation attention = Counted("aten.attention", 2, 1000);
  attention.mask_excluded_flops = 1000;
  attention.mask_unread_calls = 2;
  attention.mask_unread_message = "the mask is a meta tensor";
  absl::StatusOr<FlopReport> report =
      BuildFlopReport("2.13.0", {attention, Counted("aten.mm", 1, 48)}, {});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->total.is_complete());
  EXPECT_EQ(report->mask_aware->total,
            MetricResult::Partial(Count(48), MaskAwareFlopsKind()));
  ASSERT_EQ(report->mask_aware->diagnostics.size(), 1u);
  EXPECT_EQ(report->mask_aware->diagnostics[0].code, kMaskNotRead);
  EXPECT_NE(report->mask_aware->diagnostics[0].message.find(
                "ran 2 time(s) with a mask whose allowed (query, key) pairs "
                "are not known (the mask is a meta tensor)"),
            std::string::npos);
  EXPECT_TRUE(report->diagnostics.empty());
}

// Reports written before the mask-aware count still read.
TEST(FlopReportTest, ReportsWithoutMaskAwareStillRead) {
  absl::StatusOr<FlopReport> report =
      BuildFlopReport("2.13.0", {Counted("aten.mm", 1, 48)}, {});
  ASSERT_TRUE(report.ok());
  Json json = FlopReportToJson(*report);
  json.erase("mask_aware");
  absl::StatusOr<FlopReport> read = FlopReportFromJson(json);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->mask_aware.has_value());
}

TEST(FlopReportTest, ElementwiseMethodRenamesTheMethodsAndKeepsTheValues) {
  absl::StatusOr<FlopReport> report = BuildFlopReport(
      "2.13.0", {Counted("aten.relu", 1, 12), Seen("aten.embedding", 1)}, {});
  ASSERT_TRUE(report.ok()) << report.status();
  UseElementwiseMethod(*report);
  EXPECT_EQ(report->method, kElementwiseFlopsMethod);
  EXPECT_EQ(report->total,
            MetricResult::Partial(
                Count(12), MetricKind{"FLOPs", "workload",
                                      std::string(kElementwiseFlopsMethod)}));
  ASSERT_TRUE(report->mask_aware.has_value());
  EXPECT_EQ(report->mask_aware->total.method(),
            kElementwiseMaskAwareFlopsMethod);
  EXPECT_EQ(*report->mask_aware->total.known_value(), MetricValue(Count(12)));
  absl::StatusOr<FlopReport> read =
      FlopReportFromJson(FlopReportToJson(*report));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, *report);
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

// The split per operator: each operator's slots, the rest "unknown"; an
// operator counted at zero FLOPs has none. Written and read back.
TEST(FlopReportTest, ByOperatorPrecisionSplitsEachOperator) {
  OperatorObservation mm = Counted("aten.mm", 3, 700);
  mm.flops_by_precision[PrecisionIndex(Precision::kBf16)] = 400;
  mm.flops_by_precision[PrecisionIndex(Precision::kFp8)] = 200;
  OperatorObservation bmm = Counted("aten.bmm", 1, 50);
  bmm.flops_by_precision[PrecisionIndex(Precision::kBf16)] = 50;
  OperatorObservation empty = Counted("aten.addmm", 1, 0);
  absl::StatusOr<FlopReport> report =
      BuildFlopReport("2.13.0", {mm, bmm, empty}, {});
  ASSERT_TRUE(report.ok()) << report.status();
  const std::map<std::string, std::map<std::string, Count>> expected = {
      {"aten.mm", {{"bf16", 400}, {"fp8", 200}, {"unknown", 100}}},
      {"aten.bmm", {{"bf16", 50}}}};
  EXPECT_EQ(report->by_operator_precision, expected);
  EXPECT_EQ(report->by_operator.at("aten.addmm"), 0);
  const Json json = FlopReportToJson(*report);
  EXPECT_EQ(json["by_operator_precision"]["aten.mm"]["fp8"], 200);
  EXPECT_FALSE(json["by_operator_precision"].contains("aten.addmm"));
  absl::StatusOr<Json> parsed = ParseJson(DumpJson(json));
  ASSERT_TRUE(parsed.ok());
  absl::StatusOr<FlopReport> back = FlopReportFromJson(*parsed);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->by_operator_precision, expected);
  EXPECT_EQ(*back, *report);
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

TEST(FlopReportTest, ReadingChecksByOperatorPrecision) {
  const std::string precision = R"(,"by_precision":{"bf16":40,"tf32":8})";
  // Written before the member existed: read with none.
  absl::StatusOr<FlopReport> old = ReadWith(precision);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_TRUE(old->by_operator_precision.empty());
  absl::StatusOr<FlopReport> split = ReadWith(absl::StrCat(
      precision,
      R"(,"by_operator_precision":{"aten.mm":{"bf16":40,"tf32":8}})"));
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->by_operator_precision.at("aten.mm").at("tf32"), 8);
  EXPECT_EQ(ReadWith(absl::StrCat(
                         precision,
                         R"(,"by_operator_precision":{"aten.mm":{"bf16":40}})"))
                .status()
                .message(),
            "flop_report.by_operator_precision.aten.mm: sums to 40, not the "
            "operator's FLOPs 48");
  EXPECT_EQ(ReadWith(absl::StrCat(
                         precision,
                         R"(,"by_operator_precision":{"aten.mm":{"bf16":48}})"))
                .status()
                .message(),
            "flop_report.by_operator_precision: does not sum to by_precision, "
            "precision by precision");
  EXPECT_EQ(
      ReadWith(
          absl::StrCat(precision,
                       R"(,"by_operator_precision":{"aten.bmm":{"bf16":48}})"))
          .status()
          .message(),
      "flop_report.by_operator_precision.aten.bmm: names no operator of "
      "by_operator");
  EXPECT_EQ(ReadWith(absl::StrCat(precision, R"(,"by_operator_precision":{})"))
                .status()
                .message(),
            "flop_report.by_operator_precision: has no split for aten.mm (48 "
            "FLOPs)");
  EXPECT_EQ(ReadWith(absl::StrCat(
                         precision,
                         R"(,"by_operator_precision":{"aten.mm":{"fp4":48}})"))
                .status()
                .message(),
            "flop_report.by_operator_precision.aten.mm.fp4: unknown precision "
            "'fp4' (fp64, fp32, tf32, bf16, fp16, fp8, int8 or unknown)");
}

// A report with every optional member, and diagnostics in each.
FlopReport EveryMember() { return testing::FlopReportWithEveryMember(); }

}  // namespace

template <>
struct FieldTableSamples<OperatorBytes> {
  static std::vector<OperatorBytes> Get() { return {{}, {Count(1) << 80, 3}}; }
};
template <>
struct FieldTableSamples<IgnoredOperator> {
  static std::vector<IgnoredOperator> Get() { return {{2, "a view"}}; }
};
template <>
struct FieldTableSamples<MaskAwareFlops> {
  static std::vector<MaskAwareFlops> Get() {
    return {MaskAwareFlops{}, *EveryMember().mask_aware};
  }
};
template <>
struct FieldTableSamples<BytesMoved> {
  static std::vector<BytesMoved> Get() {
    BytesMoved with_upper_bound = *EveryMember().bytes;
    with_upper_bound.upper_bound =
        MetricResult::Partial(Count(9), UnfusedBytesKind());
    return {BytesMoved{}, *EveryMember().bytes, with_upper_bound};
  }
};

template <>
struct FieldTableSamples<FlopReport> {
  static std::vector<FlopReport> Get() { return {FlopReport{}, EveryMember()}; }
};

namespace {

using FlopReportRecords =
    ::testing::Types<OperatorBytes, IgnoredOperator, MaskAwareFlops, BytesMoved,
                     FlopReport>;
INSTANTIATE_TYPED_TEST_SUITE_P(FlopReport, FieldTableRoundTrip,
                               FlopReportRecords);

// Each object of a report refuses a key it does not know, with its path
// (the report's own level keeps accepting others: a rank's report carries
// "distributed" and "communication").
TEST(FlopReportTest, AnUnknownKeyInsideAMemberIsRefusedWithItsPath) {
  const Json json = FlopReportToJson(EveryMember());
  ASSERT_TRUE(FlopReportFromJson(json).ok());
  for (const std::string at :
       {"/total", "/mask_aware", "/bytes", "/bytes/by_operator/aten.mm",
        "/ignored_operators/aten.view"}) {
    Json edited = json;
    edited[Json::json_pointer(at)]["extra"] = 1;
    absl::StatusOr<FlopReport> read = FlopReportFromJson(edited);
    ASSERT_FALSE(read.ok()) << at;
    std::string path = "flop_report" + at + ".extra";
    std::replace(path.begin(), path.end(), '/', '.');
    EXPECT_EQ(path + ": unknown field", read.status().message());
  }
  Json rank = json;
  rank["distributed"] = Json::object();
  EXPECT_TRUE(FlopReportFromJson(rank).ok());
}

}  // namespace
}  // namespace torchscan::report
