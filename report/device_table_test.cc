#include "report/device_table.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "report/field_table_testing.h"
#include "report/json_io.h"

namespace torchscan::report {
namespace {

// One row in the table's JSON form, for the malformed-table tests.
std::string Row(absl::string_view name, absl::string_view memory_bandwidth,
                absl::string_view peaks = R"({"bf16": 1e12})") {
  return absl::StrCat(R"({"name": ")", name,
                      R"(", "reported_names": [], "peak_flops": )", peaks,
                      R"(, "memory_bandwidth": )", memory_bandwidth,
                      R"(, "interconnect_bandwidth": null, "source": "s"})");
}

std::string Table(absl::string_view rows) {
  return absl::StrCat(R"({"about": "a", "devices": [)", rows, "]}");
}

std::string ParseError(absl::string_view text) {
  return std::string(ParseDeviceTable(text, "t.json").status().message());
}

TEST(DeviceTableTest, EveryRowOfTheEmbeddedTableIsRead) {
  const std::vector<std::string> expected = {"H100 SXM",
                                             "H100 PCIe",
                                             "H100 NVL",
                                             "H200",
                                             "H200 NVL",
                                             "B200",
                                             "A100 SXM 80GB",
                                             "A100 SXM 40GB",
                                             "A100 PCIe 80GB",
                                             "A100 PCIe 40GB",
                                             "L4",
                                             "L40S",
                                             "MI300X"};
  EXPECT_EQ(expected, BuiltinDeviceTable().CanonicalNames());
}

TEST(DeviceTableTest, ARowHoldsTheDatasheetFigures) {
  const DeviceModel* h100 = FindDeviceModel("H100 SXM");
  ASSERT_NE(nullptr, h100);
  EXPECT_EQ(std::vector<std::string>{"NVIDIA H100 80GB HBM3"},
            h100->reported_names);
  EXPECT_EQ((std::map<std::string, double>{{"bf16", 989.5e12},
                                           {"fp16", 989.5e12},
                                           {"fp32", 67e12},
                                           {"fp64", 67e12},
                                           {"fp8", 1979e12},
                                           {"int8", 1979e12},
                                           {"tf32", 494.5e12}}),
            h100->peak_flops);
  EXPECT_EQ(3.35e12, h100->memory_bandwidth);
  EXPECT_EQ(std::optional<double>(900e9), h100->interconnect_bandwidth);
  EXPECT_EQ(
      "NVIDIA H100 Tensor Core GPU datasheet "
      "(nvidia.com/en-us/data-center/h100), sparse figures halved, SXM column",
      h100->source);
  EXPECT_EQ("", h100->note);
}

TEST(DeviceTableTest, ARowWithoutAPrecisionHasNoPeakForItAndSaysWhy) {
  const DeviceModel* b200 = FindDeviceModel("NVIDIA B200");
  ASSERT_NE(nullptr, b200);
  EXPECT_EQ(0u, b200->peak_flops.count("fp64"));
  EXPECT_EQ(0u, b200->peak_flops.count("fp32"));
  EXPECT_EQ(2250e12, b200->peak_flops.at("bf16"));
  EXPECT_EQ("no FP64 or plain FP32 figure per GPU in the source", b200->note);
}

TEST(DeviceTableTest, ReportedNamesFindTheirRow) {
  EXPECT_EQ("H100 SXM", FindDeviceModel("NVIDIA H100 80GB HBM3")->name);
  EXPECT_EQ("A100 PCIe 40GB", FindDeviceModel("NVIDIA A100-PCIE-40GB")->name);
  EXPECT_EQ("MI300X", FindDeviceModel("AMD Instinct MI300X")->name);
  EXPECT_EQ("L40S", FindDeviceModel("NVIDIA L40S")->name);
}

TEST(DeviceTableTest, CaseAndRunsOfWhitespaceDoNotMatter) {
  EXPECT_EQ("H100 SXM", FindDeviceModel("  nvidia\tH100   80gb HBM3 ")->name);
  EXPECT_EQ("H100 SXM", FindDeviceModel("h100 sxm")->name);
  EXPECT_EQ("H200 NVL", FindDeviceModel("H200\nNVL")->name);
  // Python's str.isspace() counts the information separators too.
  EXPECT_EQ("L4", FindDeviceModel("NVIDIA\x1cL4")->name);
}

TEST(DeviceTableTest, NamesOnlyLikeARowFindNothing) {
  EXPECT_EQ("L4", FindDeviceModel("L4")->name);
  EXPECT_EQ("L40S", FindDeviceModel("L40S")->name);
  EXPECT_EQ(nullptr, FindDeviceModel("NVIDIA L40"));
  EXPECT_EQ("H100 NVL", FindDeviceModel("H100 NVL")->name);
  EXPECT_EQ(nullptr, FindDeviceModel("H100"));
  EXPECT_EQ(nullptr, FindDeviceModel("NVIDIA H100"));
  EXPECT_EQ(nullptr, FindDeviceModel("NVIDIA H100 80GB HBM3 (MIG 1g.10gb)"));
  EXPECT_EQ(nullptr, FindDeviceModel("NVIDIA-H100-80GB-HBM3"));
  EXPECT_EQ(nullptr, FindDeviceModel(""));
}

// The documented difference from Python: no Unicode folding.
TEST(DeviceTableTest, NonAsciiInputIsNotFolded) {
  EXPECT_EQ(nullptr, FindDeviceModel("\xef\xbc\xac\xef\xbc\x94"));  // "Ｌ４"
  EXPECT_EQ(nullptr, FindDeviceModel("NVIDIA\xc2\xa0L4"));  // no-break space
}

TEST(DeviceTableTest, NormalisationLowersAsciiAndJoinsWhitespace) {
  EXPECT_EQ("nvidia h100 80gb hbm3",
            NormalizeDeviceName("  NVIDIA\tH100 \r\n 80GB hbm3 "));
  EXPECT_EQ("", NormalizeDeviceName(" \t "));
}

TEST(DeviceTableTest, AWellFormedTableIsRead) {
  absl::StatusOr<DeviceTable> table =
      ParseDeviceTable(Table(Row("toy", "1e10")), "t.json");
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(1u, table->devices.size());
  EXPECT_EQ(1e10, table->devices[0].memory_bandwidth);
  EXPECT_EQ(std::nullopt, table->devices[0].interconnect_bandwidth);
  EXPECT_EQ(&table->devices[0], table->Find("TOY"));
}

TEST(DeviceTableTest, TextThatIsNotJsonIsRefusedWithTheFile) {
  EXPECT_THAT(ParseError("{\"devices\": ["), testing::StartsWith("t.json: "));
}

TEST(DeviceTableTest, ABadFigureIsRefusedWithItsPath) {
  EXPECT_EQ(
      "t.json: devices[1].memory_bandwidth: is not positive",
      ParseError(Table(absl::StrCat(Row("a", "1e10"), ", ", Row("b", "0")))));
  EXPECT_EQ("t.json: devices[0].peak_flops.bf16: expected a number, got string",
            ParseError(Table(Row("a", "1e10", R"({"bf16": "inf"})"))));
}

TEST(DeviceTableTest, AnUnknownPrecisionIsRefused) {
  EXPECT_EQ(
      "t.json: devices[0].peak_flops: unknown precision 'fp4' (fp64, fp32, "
      "tf32, bf16, fp16, fp8, int8)",
      ParseError(Table(Row("a", "1e10", R"({"fp4": 1e12})"))));
  EXPECT_EQ(
      "t.json: devices[0].peak_flops: unknown precision 'unknown' "
      "(fp64, fp32, tf32, bf16, fp16, fp8, int8)",
      ParseError(Table(Row("a", "1e10", R"({"unknown": 1e12})"))));
}

TEST(DeviceTableTest, ANameOfTwoRowsIsRefused) {
  EXPECT_EQ(
      "t.json: devices[1]: the name 'A  ' names two rows (devices[0] "
      "too)",
      ParseError(
          Table(absl::StrCat(Row("a", "1e10"), ", ", Row("A  ", "2e10")))));
}

TEST(DeviceTableTest, AnUnknownMemberIsRefused) {
  std::string row = Row("a", "1e10");
  row.insert(1, R"("peak": 1, )");
  EXPECT_EQ("t.json: devices[0].peak: unknown field", ParseError(Table(row)));
}

}  // namespace

template <>
struct FieldTableSamples<DeviceModel> {
  static std::vector<DeviceModel> Get() {
    return {{"toy", {"Toy 1"}, {{"bf16", 1e12}}, 1e10, 2e9, "s", "a note"}};
  }
};

template <>
struct FieldTableSamples<DeviceTable> {
  static std::vector<DeviceTable> Get() {
    return {{"about", FieldTableSamples<DeviceModel>::Get()}};
  }
};

namespace {

using DeviceRecords = ::testing::Types<DeviceModel, DeviceTable>;
INSTANTIATE_TYPED_TEST_SUITE_P(Devices, FieldTableRoundTrip, DeviceRecords);

}  // namespace
}  // namespace torchscan::report
