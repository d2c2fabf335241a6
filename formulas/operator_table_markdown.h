// The operator tables as Markdown, for docs/operators.md (a test checks the
// document carries exactly this text, so the docs cannot drift).

#ifndef TORCHSCAN_FORMULAS_OPERATOR_TABLE_MARKDOWN_H_
#define TORCHSCAN_FORMULAS_OPERATOR_TABLE_MARKDOWN_H_

#include <string>

namespace torchscan::formulas {

std::string CountedOperatorsMarkdown();
std::string IgnoredOperatorsMarkdown();
// The opt-in elementwise convention's rules (elementwise_formulas.h).
std::string ElementwiseRulesMarkdown();

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_OPERATOR_TABLE_MARKDOWN_H_
