// Our module formulas against the released torchscan 0.2.0's own results.
//
// formulas/testdata/module_formula_goldens.json is the output of
// tools/make_module_formula_goldens.py, which runs upstream's formulas (and
// crawl_module) on real torch modules. Each case carries the plain module
// description and call the Python front end would send, and what upstream
// returned: values, warnings, exceptions, metrics and diagnostics.

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "formulas/module_formulas.h"
#include "formulas/module_json.h"
#include "formulas/module_metrics.h"
#include "gtest/gtest.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::formulas {
namespace {

using report::Json;

std::string GoldenPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  const std::string relative = "formulas/testdata/module_formula_goldens.json";
  if (srcdir == nullptr || workspace == nullptr) return relative;
  return absl::StrCat(srcdir, "/", workspace, "/", relative);
}

const Json& Goldens() {
  static const Json* const kGoldens = [] {
    std::ifstream file(GoldenPath());
    std::stringstream text;
    text << file.rdbuf();
    absl::StatusOr<Json> parsed = report::ParseJson(text.str());
    return new Json(parsed.ok() ? *std::move(parsed) : Json());
  }();
  return *kGoldens;
}

struct GoldenCase {
  std::string list;  // "formula_cases" or "crawl_cases"
  std::size_t index;
  std::string name;
};

std::vector<GoldenCase> Cases(const std::string& list) {
  std::vector<GoldenCase> cases;
  const Json& goldens = Goldens();
  if (!goldens.contains(list)) return cases;
  for (std::size_t i = 0; i < goldens[list].size(); ++i) {
    cases.push_back({list, i, goldens[list][i]["name"].get<std::string>()});
  }
  return cases;
}

void PrintTo(const GoldenCase& golden, std::ostream* out) {
  *out << golden.list << "[" << golden.index << "] " << golden.name;
}

// gtest parameter names allow only [A-Za-z0-9_].
std::string TestName(const testing::TestParamInfo<GoldenCase>& info) {
  std::string name = absl::StrCat(info.param.index, "_");
  for (char c : info.param.name) {
    name.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  }
  return name;
}

// Upstream's number as a metric value of the same kind (int, float, str).
report::MetricValue ExpectedValue(const Json& node) {
  if (node.is_string()) return node.get<std::string>();
  if (node.is_number_float()) return node.get<double>();
  return *report::JsonToCount(node, "value");
}

std::string KindAndValue(const report::MetricValue& value) {
  return report::DumpJson(report::ToJson(value));
}

template <typename T>
void ExpectSideChannels(const FormulaOutcome<T>& outcome,
                        const Json& expected) {
  std::vector<std::string> warnings;
  for (const Json& warning : expected["warnings"]) {
    warnings.push_back(warning.get<std::string>());
  }
  if (expected.contains("error")) {
    ASSERT_TRUE(outcome.error.has_value())
        << "upstream raised " << expected["error"].dump();
    EXPECT_EQ(outcome.error->type,
              expected["error"]["type"].get<std::string>());
    EXPECT_EQ(outcome.error->message,
              expected["error"]["message"].get<std::string>());
    return;
  }
  ASSERT_FALSE(outcome.error.has_value()) << outcome.error->ToString();
  EXPECT_EQ(outcome.warnings, warnings);
}

void ExpectCount(const absl::StatusOr<FormulaOutcome<Count>>& outcome,
                 const Json& expected, absl::string_view metric) {
  SCOPED_TRACE(metric);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  ExpectSideChannels(*outcome, expected);
  if (expected.contains("value")) {
    ASSERT_TRUE(outcome->value.has_value());
    EXPECT_EQ(report::CountToString(*outcome->value),
              report::CountToString(
                  *report::JsonToCount(expected["value"], "value")));
  }
}

class FormulaGoldenTest : public testing::TestWithParam<GoldenCase> {};

TEST_P(FormulaGoldenTest, MatchesUpstream) {
  const Json& golden = Goldens()[GetParam().list][GetParam().index];
  absl::StatusOr<ModuleDescription> module =
      report::FromJson<ModuleDescription>(
          report::JsonValue(golden["module"], "module"));
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<ModuleCall> call =
      report::FromJson<ModuleCall>(report::JsonValue(golden["call"], "call"));
  ASSERT_TRUE(call.ok()) << call.status();

  ExpectCount(ModuleFlops(*module, *call), golden["flops"], "flops");
  ExpectCount(ModuleMacs(*module, *call), golden["macs"], "macs");
  ExpectCount(ModuleDmas(*module, *call), golden["dmas"], "dmas");

  SCOPED_TRACE("receptive_field");
  absl::StatusOr<FormulaOutcome<ReceptiveField>> field =
      ModuleReceptiveField(*module, *call);
  ASSERT_TRUE(field.ok()) << field.status();
  const Json& expected = golden["receptive_field"];
  ExpectSideChannels(*field, expected);
  if (expected.contains("value")) {
    ASSERT_TRUE(field->value.has_value());
    const report::MetricValue actual[] = {field->value->receptive_field,
                                          field->value->effective_stride,
                                          field->value->effective_padding};
    for (std::size_t i = 0; i < 3; ++i) {
      // Same number and same Python kind: 1 and 1.0 differ in the JSON.
      EXPECT_EQ(KindAndValue(actual[i]),
                KindAndValue(ExpectedValue(expected["value"][i])))
          << "item " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Upstream, FormulaGoldenTest,
                         testing::ValuesIn(Cases("formula_cases")), TestName);

class CrawlGoldenTest : public testing::TestWithParam<GoldenCase> {};

// Every metric-leaf call of one crawl, in completion order: the metric
// entries of each layer record and the concatenated module diagnostics.
TEST_P(CrawlGoldenTest, MatchesUpstream) {
  const Json& golden = Goldens()[GetParam().list][GetParam().index];
  Json diagnostics = Json::array();
  for (const Json& captured : golden["calls"]) {
    SCOPED_TRACE(absl::StrCat("path '", captured["path"].get<std::string>(),
                              "' call ", captured["call_index"].dump()));
    absl::StatusOr<ModuleDescription> module =
        report::FromJson<ModuleDescription>(
            report::JsonValue(captured["module"], "module"));
    ASSERT_TRUE(module.ok()) << module.status();
    absl::StatusOr<ModuleCall> call = report::FromJson<ModuleCall>(
        report::JsonValue(captured["call"], "call"));
    ASSERT_TRUE(call.ok()) << call.status();
    absl::StatusOr<ModuleMetrics> metrics = EvaluateModuleMetrics(
        captured["path"].get<std::string>(), *module, *call);
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    const Json actual = ModuleMetricsToJson(*metrics);
    // Dumped text compares key order and number kinds too.
    EXPECT_EQ(report::DumpJson(actual["metrics"], 1),
              report::DumpJson(captured["metrics"], 1));
    for (const Json& diagnostic : actual["diagnostics"]) {
      diagnostics.push_back(diagnostic);
    }
  }
  EXPECT_EQ(report::DumpJson(diagnostics, 1),
            report::DumpJson(golden["diagnostics"], 1));
}

INSTANTIATE_TEST_SUITE_P(Upstream, CrawlGoldenTest,
                         testing::ValuesIn(Cases("crawl_cases")), TestName);

TEST(GoldenFile, IsPresentAndFromTheReleasedPackage) {
  const Json& goldens = Goldens();
  ASSERT_TRUE(goldens.is_object()) << "cannot read " << GoldenPath();
  EXPECT_EQ(goldens["torchscan_version"], "0.2.0");
  EXPECT_GE(goldens["formula_cases"].size(), 100u);
  EXPECT_GE(goldens["crawl_cases"].size(), 20u);
}

}  // namespace
}  // namespace torchscan::formulas
