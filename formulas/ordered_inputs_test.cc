// TorchScan 0.2's argument ordering against the released crawler's own ordering
// (torchscan.crawler._ordered_inputs on real forward signatures), recorded by
// tools/make_module_formula_goldens.py.

#include "formulas/ordered_inputs.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "formulas/module_json.h"
#include "gtest/gtest.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::formulas {
namespace {

using report::Json;

Json Goldens() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  std::string path = "formulas/testdata/module_formula_goldens.json";
  if (srcdir != nullptr && workspace != nullptr) {
    path = absl::StrCat(srcdir, "/", workspace, "/", path);
  }
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  absl::StatusOr<Json> parsed = report::ParseJson(text.str());
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? *parsed : Json();
}

ForwardParameter::Kind KindNamed(const std::string& name) {
  if (name == "positional_only") return ForwardParameter::Kind::kPositionalOnly;
  if (name == "var_positional") return ForwardParameter::Kind::kVarPositional;
  if (name == "keyword_only") return ForwardParameter::Kind::kKeywordOnly;
  if (name == "var_keyword") return ForwardParameter::Kind::kVarKeyword;
  return ForwardParameter::Kind::kPositionalOrKeyword;
}

CallValue Value(const Json& node) {
  absl::StatusOr<CallValue> value =
      report::FromJson<CallValue>(report::JsonValue(node, "value"));
  EXPECT_TRUE(value.ok()) << value.status();
  return value.ok() ? *value : CallValue::None();
}

TEST(OrderedInputs, MatchesTheReleasedCrawler) {
  const Json goldens = Goldens();
  ASSERT_TRUE(goldens.contains("ordered_inputs_cases"));
  ASSERT_GE(goldens["ordered_inputs_cases"].size(), 15u);
  for (const Json& golden : goldens["ordered_inputs_cases"]) {
    SCOPED_TRACE(golden["name"].get<std::string>());
    ForwardSignature signature;
    for (const Json& parameter : golden["signature"]) {
      ForwardParameter entry;
      entry.name = parameter["name"].get<std::string>();
      entry.kind = KindNamed(parameter["kind"].get<std::string>());
      if (parameter.contains("default"))
        entry.default_value = Value(parameter["default"]);
      signature.parameters.push_back(entry);
    }
    std::vector<CallValue> args;
    for (const Json& arg : golden["args"]) args.push_back(Value(arg));
    std::vector<KeywordArgument> kwargs;
    for (const Json& kwarg : golden["kwargs"]) {
      kwargs.push_back({kwarg[0].get<std::string>(), Value(kwarg[1])});
    }
    std::vector<CallValue> expected;
    for (const Json& item : golden["ordered"]) expected.push_back(Value(item));
    EXPECT_EQ(OrderedInputs(&signature, args, kwargs), expected);
  }
}

TEST(OrderedInputs, WithoutASignatureArgsThenKeywordValues) {
  const std::vector<CallValue> args = {CallValue::Tensor({2})};
  const std::vector<KeywordArgument> kwargs = {
      {"mask", CallValue::None()}, {"scale", CallValue::Scalar("float")}};
  EXPECT_EQ(OrderedInputs(nullptr, args, kwargs),
            (std::vector<CallValue>{CallValue::Tensor({2}), CallValue::None(),
                                    CallValue::Scalar("float")}));
}

}  // namespace
}  // namespace torchscan::formulas
