#include "report/render/roofline_plot.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "report/field_table_testing.h"

namespace torchscan::report::render {
namespace {

// A device with a bf16 peak of 1e12 FLOP/s and 1e10 bytes/s: the bf16
// ridge point is at 100 FLOPs per byte. It has no fp32 peak.
RooflineDevice Device() {
  return RooflineDevice{"toy", {{"bf16", 1e12}}, 1e10};
}

// aten.mm: a bf16 (64, 64) @ (64, 128): 2 * 64 * 64 * 128 = 1,048,576
// FLOPs, reading (64 * 64 + 64 * 128) * 2 = 24,576 bytes and writing
// 64 * 128 * 2 = 16,384: 25.6 FLOPs per byte, memory-bound.
// aten.convolution: 4,000,000 bf16 FLOPs over 1,000 bytes (4,000 per byte,
// compute-bound), its bytes partial. aten.addmm ran in fp32, which the
// device has no peak for; aten.relu moved bytes but has no FLOPs.
FlopReport Report() {
  FlopReport report;
  report.by_operator = {{"aten.mm", 1048576},
                        {"aten.convolution", 4000000},
                        {"aten.addmm", 1000},
                        {"aten.relu", 0}};
  report.by_operator_precision = {{"aten.mm", {{"bf16", 1048576}}},
                                  {"aten.convolution", {{"bf16", 4000000}}},
                                  {"aten.addmm", {{"fp32", 1000}}}};
  BytesMoved bytes;
  bytes.by_operator = {{"aten.mm", {24576, 16384}},
                       {"aten.convolution", {600, 400}},
                       {"aten.addmm", {100, 50}},
                       {"aten.relu", {64, 64}}};
  bytes.diagnostics.push_back(Diagnostic::ForOperator(
      std::string(kBytesNotKnown), "bytes", "aten.convolution", "sparse"));
  report.bytes = bytes;
  return report;
}

TEST(RooflinePlotTest, PlacesOperatorsWithFlopsAndBytesUnderTheRoofs) {
  const RooflinePlot plot = PlotRoofline(Report(), Device());
  ASSERT_EQ(2u, plot.points.size());
  // by_operator's order: aten.convolution before aten.mm.
  const RooflinePlotPoint& conv = plot.points[0];
  EXPECT_EQ("aten.convolution", conv.op);
  EXPECT_DOUBLE_EQ(4000.0, conv.intensity);
  EXPECT_DOUBLE_EQ(1e12, conv.bound_flops_per_second);  // the bf16 roof
  EXPECT_TRUE(conv.partial);
  const RooflinePlotPoint& mm = plot.points[1];
  EXPECT_EQ("aten.mm", mm.op);
  EXPECT_EQ(40960, mm.bytes);
  EXPECT_DOUBLE_EQ(25.6, mm.intensity);
  EXPECT_DOUBLE_EQ(25.6 * 1e10, mm.bound_flops_per_second);  // memory roof
  EXPECT_FALSE(mm.partial);
  EXPECT_THAT(plot.left_out,
              testing::ElementsAre("aten.addmm (no peak for fp32)"));
  EXPECT_EQ((std::map<std::string, double>{{"bf16", 1e12}}), plot.roofs);
}

// A mixed-precision operator's peak is its FLOPs over their time at each
// precision's peak: 1e12 bf16 FLOPs at 1e12 and 1e12 fp8 at 2e12 take 1.5 s,
// so 2e12 FLOPs run at most at 1.333e12 FLOP/s.
TEST(RooflinePlotTest, MixedPrecisionsShareTheOperatorsTime) {
  FlopReport report;
  report.by_operator = {{"aten._scaled_mm", 2000000000000}};
  report.by_operator_precision = {
      {"aten._scaled_mm", {{"bf16", 1000000000000}, {"fp8", 1000000000000}}}};
  BytesMoved bytes;
  bytes.by_operator = {{"aten._scaled_mm", {1000000, 0}}};
  report.bytes = bytes;
  RooflineDevice device{"toy", {{"bf16", 1e12}, {"fp8", 2e12}}, 1e12};
  const RooflinePlot plot = PlotRoofline(report, device);
  ASSERT_EQ(1u, plot.points.size());
  EXPECT_DOUBLE_EQ(2e12 / 1.5, plot.points[0].peak);
  EXPECT_DOUBLE_EQ(2e12 / 1.5, plot.points[0].bound_flops_per_second);
  EXPECT_EQ(2u, plot.roofs.size());
}

TEST(RooflinePlotTest, AReportWithoutBytesHasNoPoints) {
  FlopReport report = Report();
  report.bytes.reset();
  EXPECT_TRUE(PlotRoofline(report, Device()).points.empty());
}

int Occurrences(absl::string_view needle, absl::string_view text) {
  int count = 0;
  for (std::size_t at = text.find(needle); at != absl::string_view::npos;
       at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

TEST(RooflinePlotTest, TheSectionDrawsOnePointPerOperatorAndBothRoofs) {
  const std::string html =
      RooflineSection(PlotRoofline(Report(), Device()), Device());
  EXPECT_TRUE(absl::StartsWith(html, "<section id=\"roofline\">"));
  EXPECT_EQ(2, Occurrences("<circle class=\"point", html));
  EXPECT_EQ(1, Occurrences("class=\"point partial\"", html));
  EXPECT_EQ(1, Occurrences("memory-roof", html));
  EXPECT_EQ(1, Occurrences("compute-roof", html));
  EXPECT_THAT(html, testing::HasSubstr(
                        "aten.mm: 1,048,576 FLOPs, 40,960 bytes, 25.6 "
                        "FLOPs/byte, at most 2.56e+11 FLOP/s (memory-bound)"));
  EXPECT_THAT(
      html, testing::HasSubstr("Not plotted: aten.addmm (no peak for fp32)."));
}

TEST(RooflinePlotTest, ReadsADeviceAndRefusesBadNumbers) {
  Json node = Json::parse(
      R"({"name": "toy", "peak_flops": {"bf16": 1e12}, "memory_bandwidth": 1e10})");
  absl::StatusOr<RooflineDevice> device = RooflineDeviceFromJson(node);
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ("toy", device->name);
  EXPECT_DOUBLE_EQ(1e12, device->peak_flops.at("bf16"));
  EXPECT_DOUBLE_EQ(1e10, device->memory_bandwidth);
  node["memory_bandwidth"] = 0;
  EXPECT_EQ("device.memory_bandwidth: is not positive",
            RooflineDeviceFromJson(node).status().message());
  node["memory_bandwidth"] = 1e10;
  node["peak"] = 1;
  EXPECT_FALSE(RooflineDeviceFromJson(node).ok());
}

}  // namespace
}  // namespace torchscan::report::render

namespace torchscan::report {

template <>
struct FieldTableSamples<render::RooflineDevice> {
  static std::vector<render::RooflineDevice> Get() {
    return {{"toy", {{"bf16", 1e12}, {"fp32", 2.5e11}}, 1e10, "made up"}};
  }
};

namespace {

using RooflineRecords = ::testing::Types<render::RooflineDevice>;
INSTANTIATE_TYPED_TEST_SUITE_P(Roofline, FieldTableRoundTrip, RooflineRecords);

// A rate is a finite JSON number: "inf", which a double field reads, is not.
TEST(RooflinePlotTest, ARateIsAPositiveJsonNumber) {
  Json node = ToJson(FieldTableSamples<render::RooflineDevice>::Get()[0]);
  node["peak_flops"]["fp32"] = "inf";
  EXPECT_EQ("device.peak_flops.fp32: expected a number, got string",
            render::RooflineDeviceFromJson(node).status().message());
  node["peak_flops"]["fp32"] = -1;
  EXPECT_EQ("device.peak_flops.fp32: is not positive",
            render::RooflineDeviceFromJson(node).status().message());
}

}  // namespace
}  // namespace torchscan::report
