#include "formulas/operator_table_markdown.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "formulas/elementwise_formulas.h"
#include "formulas/ignored_operators.h"
#include "formulas/operator_formulas.h"

namespace torchscan::formulas {
namespace {

std::string ReportName(absl::string_view packet) {
  return absl::StrReplaceAll(packet, {{"::", "."}});
}

}  // namespace

std::string CountedOperatorsMarkdown() {
  std::string out =
      "| operator | formula | relation to FlopCounterMode |\n|---|---|---|\n";
  for (const OperatorFormulaEntry& entry : AllOperatorFormulas()) {
    absl::StrAppend(&out, "| `", ReportName(entry.packet), "` | ",
                    absl::StrReplaceAll(entry.convention, {{"|", "\\|"}}),
                    " | ", FormulaOriginName(entry.origin), " |\n");
  }
  return out;
}

std::string IgnoredOperatorsMarkdown() {
  std::string out = "| operator | reason |\n|---|---|\n";
  for (const IgnoredOperatorEntry& entry : AllIgnoredOperators()) {
    absl::StrAppend(&out, "| `", ReportName(entry.packet), "` | ", entry.reason,
                    " |\n");
  }
  return out;
}

std::string ElementwiseRulesMarkdown() {
  std::string out = "| operators | FLOPs |\n|---|---|\n";
  for (const OperatorFormulaEntry& entry : AllElementwiseRules()) {
    const std::string operators =
        absl::StrContains(entry.packet, "::")
            ? absl::StrCat("`", ReportName(entry.packet), "`")
            : absl::StrCat("tagged `", entry.packet, "`");
    absl::StrAppend(&out, "| ", operators, " | ", entry.convention, " |\n");
  }
  for (const IgnoredOperatorEntry& entry : AllElementwiseIgnored()) {
    const std::string operators =
        absl::StrContains(entry.packet, "::")
            ? absl::StrCat("`", ReportName(entry.packet), "`")
            : "any operator whose schema returns views";
    absl::StrAppend(&out, "| ", operators, " | 0, ignored: ", entry.reason,
                    " |\n");
  }
  return out;
}

}  // namespace torchscan::formulas
