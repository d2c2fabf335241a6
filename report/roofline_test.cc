#include "report/roofline.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "report/device_table.h"
#include "report/field_table_testing.h"
#include "report/json_io.h"
#include "report/metric_result.h"

namespace torchscan::report {
namespace {

using ::testing::ElementsAre;

// bf16 at 1e12 FLOP/s, fp8 at 2e12, 1e10 bytes/s: the bf16 ridge point is
// at 100 FLOPs per byte, the fp8 one at 200. No fp32 peak.
RooflineDevice Toy() {
  return RooflineDevice{
      "toy", {{"bf16", 1e12}, {"fp8", 2e12}}, 1e10, "made up"};
}

RooflinePoint Point(const std::map<std::string, Count>& split, Count bytes) {
  RooflineWork work;
  work.flops_by_precision = split;
  work.bytes = bytes;
  return RooflinePointOf(Toy(), "op", work);
}

// aten.mm: 1,048,576 bf16 FLOPs over 40,960 bytes, 25.6 FLOPs per byte:
// 1.048576e-6 s of arithmetic, 4.096e-6 s of memory traffic.
TEST(RooflineTest, LowIntensityWorkIsMemoryBound) {
  const RooflinePoint point = Point({{"bf16", 1048576}}, 40960);
  EXPECT_EQ(RooflineStatus::kComplete, point.status);
  EXPECT_DOUBLE_EQ(1.048576e-6, *point.compute_seconds);
  EXPECT_DOUBLE_EQ(4.096e-6, point.memory_seconds);
  EXPECT_DOUBLE_EQ(4.096e-6, *point.seconds);
  EXPECT_DOUBLE_EQ(25.6, *point.intensity);
  EXPECT_DOUBLE_EQ(100.0, *point.ridge_point);
  EXPECT_EQ(RooflineBound::kMemory, *point.bound);
  EXPECT_EQ(std::nullopt, point.peak_precision);
}

// 4,000,000 bf16 FLOPs over 1,000 bytes: 4e-6 s against 1e-7 s.
TEST(RooflineTest, HighIntensityWorkIsComputeBound) {
  const RooflinePoint point = Point({{"bf16", 4000000}}, 1000);
  EXPECT_DOUBLE_EQ(4e-6, *point.seconds);
  EXPECT_DOUBLE_EQ(1e-7, point.memory_seconds);
  EXPECT_DOUBLE_EQ(4000.0, *point.intensity);
  EXPECT_EQ(RooflineBound::kCompute, *point.bound);
}

// 1e12 bf16 FLOPs at 1e12 and 1e12 fp8 at 2e12 take 1.5 s: 2e12 FLOPs at
// 1.333e12 FLOP/s on average, a ridge point of 133.3 FLOPs per byte.
TEST(RooflineTest, MixedPrecisionsEachUseTheirOwnPeak) {
  const RooflinePoint point =
      Point({{"bf16", 1000000000000}, {"fp8", 1000000000000}}, 1000000);
  EXPECT_EQ(2000000000000, point.flops);
  EXPECT_DOUBLE_EQ(1.5, *point.compute_seconds);
  EXPECT_DOUBLE_EQ(2e12 / 1.5 / 1e10, *point.ridge_point);
}

TEST(RooflineTest, APrecisionWithoutAPeakIsUnavailableNeverAnotherPeak) {
  const RooflinePoint point = Point({{"bf16", 10}, {"fp32", 1000}}, 100);
  EXPECT_EQ(RooflineStatus::kUnavailable, point.status);
  EXPECT_EQ("toy has no peak for fp32 (1,000 FLOPs)", *point.unavailable);
  EXPECT_EQ(std::nullopt, point.compute_seconds);
  EXPECT_EQ(std::nullopt, point.seconds);
  EXPECT_EQ(std::nullopt, point.bound);
  EXPECT_EQ(std::nullopt, point.ridge_point);
  EXPECT_DOUBLE_EQ(1e-8, point.memory_seconds);
  EXPECT_DOUBLE_EQ(10.1, *point.intensity);
}

// A module's 4e12 FLOPs, of a report whose FLOPs ran in bf16 and fp8: the
// fastest of those peaks, fp8's 2e12, gives 2 s, a lower bound.
TEST(RooflineTest, AnUnsplitCountUsesTheFastestPeakOfThePrecisionsPresent) {
  RooflineWork work;
  work.flops = 4000000000000;
  work.precisions = {"fp8", "bf16"};
  const RooflinePoint point = RooflinePointOf(Toy(), "block", work);
  EXPECT_EQ("fp8", *point.peak_precision);
  EXPECT_DOUBLE_EQ(2.0, *point.compute_seconds);
  EXPECT_DOUBLE_EQ(200.0, *point.ridge_point);
  EXPECT_EQ(std::nullopt, point.flops_by_precision);
  EXPECT_EQ(std::nullopt, point.intensity);  // no bytes
}

TEST(RooflineTest, AnUnsplitCountInAPrecisionWithoutAPeakIsUnavailable) {
  RooflineWork work;
  work.flops = 5;
  work.precisions = {"bf16", "unknown"};
  EXPECT_EQ(
      "toy has no peak for unknown, which the report's FLOPs ran in (this "
      "row is not split by precision)",
      *RooflinePointOf(Toy(), "block", work).unavailable);
  work.precisions.clear();
  EXPECT_EQ(
      "the report does not split its FLOPs by precision (no by_precision)",
      *RooflinePointOf(Toy(), "block", work).unavailable);
}

TEST(RooflineTest, NoWorkTakesNoTimeAndHasNoBound) {
  const RooflinePoint point = RooflinePointOf(Toy(), "idle", RooflineWork{});
  EXPECT_EQ(RooflineStatus::kComplete, point.status);
  EXPECT_EQ(0.0, *point.seconds);
  EXPECT_EQ(std::nullopt, point.bound);
  EXPECT_EQ(std::nullopt, point.ridge_point);
}

// mm in bf16 (memory-bound as above) and relu, which moved 2,048 bytes and
// was not counted (a diagnostic names it); one module holds both.
FlopReport Report() {
  FlopReport report;
  report.total = MetricResult::Partial(Count(1048576), OperatorFlopsKind());
  report.by_module = {{"Net", 1048576}};
  report.by_operator = {{"aten.mm", 1048576}};
  report.by_precision = {{"bf16", 1048576}};
  report.by_operator_precision = {{"aten.mm", {{"bf16", 1048576}}}};
  report.diagnostics.push_back(Diagnostic::ForOperator(
      "uncounted_operator", "flops", "aten.relu", "no formula"));
  BytesMoved bytes;
  bytes.total = MetricResult::Complete(Count(43008), BytesMovedKind());
  bytes.read = 26624;
  bytes.written = 16384;
  bytes.by_operator = {{"aten.mm", {24576, 16384}}, {"aten.relu", {1024, 0}}};
  bytes.by_module = {{"Net", 43008}};
  report.bytes = bytes;
  return report;
}

TEST(RooflineTest, AReportHasEveryOperatorModuleAndTheTotal) {
  const Roofline roofline = ComputeRoofline(Report(), Toy());
  EXPECT_EQ(Toy(), roofline.device);
  ASSERT_EQ(2u, roofline.by_operator.size());
  const RooflinePoint& mm = roofline.by_operator.at("aten.mm");
  EXPECT_EQ(RooflineStatus::kComplete, mm.status);
  EXPECT_DOUBLE_EQ(4.096e-6, *mm.seconds);
  const RooflinePoint& relu = roofline.by_operator.at("aten.relu");
  EXPECT_EQ(RooflineStatus::kPartial, relu.status);
  EXPECT_THAT(relu.partial, ElementsAre("uncounted_operator: aten.relu"));
  EXPECT_EQ(0, relu.flops);
  EXPECT_DOUBLE_EQ(1.024e-7, *relu.seconds);  // its bytes, at least
  const RooflinePoint& net = roofline.by_module.at("Net");
  EXPECT_EQ("bf16", *net.peak_precision);
  EXPECT_THAT(net.partial, ElementsAre("uncounted_operator: aten.relu"));
  EXPECT_EQ("total", roofline.total.name);
  EXPECT_EQ(RooflineStatus::kPartial, roofline.total.status);
  EXPECT_DOUBLE_EQ(4.3008e-6, *roofline.total.seconds);
  EXPECT_EQ((std::map<std::string, Count>{{"bf16", 1048576}}),
            *roofline.total.flops_by_precision);
}

TEST(RooflineTest, AReportWithoutBytesIsPartialEverywhere) {
  FlopReport report = Report();
  report.bytes.reset();
  const Roofline roofline = ComputeRoofline(report, Toy());
  const std::string missing =
      "bytes: the report has no bytes (written before they existed)";
  EXPECT_THAT(roofline.by_operator.at("aten.mm").partial, ElementsAre(missing));
  EXPECT_THAT(roofline.total.partial,
              ElementsAre("uncounted_operator: aten.relu", missing));
  EXPECT_EQ(0, roofline.total.bytes);
}

TEST(RooflineTest, ACompiledGraphMakesEveryOperatorsBytesPartial) {
  FlopReport report = Report();
  report.diagnostics.clear();
  report.total = MetricResult::Complete(Count(1048576), OperatorFlopsKind());
  report.bytes->total = MetricResult::Partial(Count(43008), BytesMovedKind());
  report.bytes->diagnostics.push_back(Diagnostic::ForPath(
      std::string(kCompiledRegionBytes), "bytes", "", "graph 0/0"));
  const Roofline roofline = ComputeRoofline(report, Toy());
  EXPECT_THAT(roofline.by_operator.at("aten.mm").partial,
              ElementsAre("bytes compiled_region_bytes"));
  EXPECT_THAT(roofline.by_module.at("Net").partial,
              ElementsAre("bytes compiled_region_bytes"));
}

TEST(RooflineTest, APartialTotalWithoutDiagnosticsSaysSo) {
  FlopReport report = Report();
  report.diagnostics.clear();
  EXPECT_THAT(ComputeRoofline(report, Toy()).total.partial,
              ElementsAre("flops: the total is partial"));
}

TEST(RooflineTest, ATableRowIsARooflineDevice) {
  const RooflineDevice device = RooflineDeviceOf(*FindDeviceModel("L4"));
  EXPECT_EQ("L4", device.name);
  EXPECT_EQ(300e9, device.memory_bandwidth);
  EXPECT_EQ(121e12, device.peak_flops.at("bf16"));
  EXPECT_THAT(device.source, ::testing::StartsWith("NVIDIA L4 Tensor Core"));
}

TEST(RooflineTest, AnUnknownDeviceModelListsTheTable) {
  EXPECT_EQ("H100 NVL", RooflineDeviceNamed("nvidia h100 nvl")->name);
  const absl::Status unknown = RooflineDeviceNamed("H100").status();
  EXPECT_EQ(
      "unknown device model 'H100': the device table (exact names only) has "
      "H100 SXM, H100 PCIe, H100 NVL, H200, H200 NVL, B200, A100 SXM 80GB, "
      "A100 SXM 40GB, A100 PCIe 80GB, A100 PCIe 40GB, L4, L40S, MI300X",
      unknown.message());
}

TEST(RooflineTest, OnlyAFlopReportHasARoofline) {
  EXPECT_EQ(Report(), *FlopReportForRoofline(FlopReportToJson(Report())));
  EXPECT_EQ(
      "roofline: a job report sums ranks that run side by side; pass one "
      "rank's FlopReport",
      FlopReportForRoofline(Json{{"kind", "job_report"}}).status().message());
  EXPECT_EQ(
      "roofline: a crawl report has no bytes moved; measure the workload "
      "with measure_flops for a roofline",
      FlopReportForRoofline(Json{{"layers", Json::array()}})
          .status()
          .message());
  EXPECT_THAT(FlopReportForRoofline(Json{{"total", 1}}).status().message(),
              ::testing::HasSubstr("not a FlopReport"));
}

// The JSON is Python's RooflinePoint.to_json(), key for key.
TEST(RooflineTest, APointsJsonHasPythonsKeys) {
  const Json json = ToJson(Point({{"bf16", 4000000}}, 1000));
  std::vector<std::string> keys;
  for (const auto& [key, value] : json.items()) keys.push_back(key);
  EXPECT_THAT(keys, ::testing::UnorderedElementsAre(
                        "name", "status", "flops", "bytes",
                        "flops_by_precision", "peak_precision", "intensity",
                        "ridge_point", "bound", "compute_seconds",
                        "memory_seconds", "seconds", "partial", "unavailable"));
  EXPECT_EQ("compute", json["bound"]);
  EXPECT_EQ("complete", json["status"]);
  EXPECT_TRUE(json["unavailable"].is_null());
}

}  // namespace

template <>
struct FieldTableSamples<RooflinePoint> {
  static std::vector<RooflinePoint> Get() {
    RooflinePoint point;
    point.name = "aten.mm";
    point.status = RooflineStatus::kPartial;
    point.flops = 10;
    point.bytes = 4;
    point.flops_by_precision = std::map<std::string, Count>{{"bf16", 10}};
    point.peak_precision = "bf16";
    point.intensity = 2.5;
    point.ridge_point = 100;
    point.bound = RooflineBound::kMemory;
    point.compute_seconds = 1e-11;
    point.memory_seconds = 4e-10;
    point.seconds = 4e-10;
    point.partial = {"bytes: partial"};
    point.unavailable = "none";
    return {point};
  }
};

template <>
struct FieldTableSamples<RooflineDevice> {
  static std::vector<RooflineDevice> Get() { return {Toy()}; }
};

namespace {

using RooflineRecords = ::testing::Types<RooflinePoint, RooflineDevice>;
INSTANTIATE_TYPED_TEST_SUITE_P(Roofline, FieldTableRoundTrip, RooflineRecords);

}  // namespace
}  // namespace torchscan::report
