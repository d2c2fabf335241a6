// docs/operators.md must carry the tables exactly as the code defines them.
#include <fstream>
#include <sstream>

#include "formulas/operator_table_markdown.h"
#include "gtest/gtest.h"

namespace torchscan::formulas {
namespace {

std::string ReadDocs() {
  std::ifstream file("docs/operators.md");
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST(OperatorDocsTest, DocsCarryTheCountedOperatorTable) {
  EXPECT_NE(ReadDocs().find(CountedOperatorsMarkdown()), std::string::npos)
      << "docs/operators.md is stale; regenerate its tables with "
         "`bazel run //formulas:print_operator_tables`";
}

TEST(OperatorDocsTest, DocsCarryTheIgnoredOperatorTable) {
  EXPECT_NE(ReadDocs().find(IgnoredOperatorsMarkdown()), std::string::npos)
      << "docs/operators.md is stale; regenerate its tables with "
         "`bazel run //formulas:print_operator_tables`";
}

TEST(OperatorDocsTest, DocsCarryTheElementwiseRuleTable) {
  EXPECT_NE(ReadDocs().find(ElementwiseRulesMarkdown()), std::string::npos)
      << "docs/operators.md is stale; regenerate its tables with "
         "`bazel run //formulas:print_operator_tables`";
}

}  // namespace
}  // namespace torchscan::formulas
