// What one module formula call produced, with TorchScan 0.2's side channels.
//
// Upstream's formulas talk to the crawler in two ways besides their return
// value: they emit Python warnings ("Module type not supported: Embedding")
// and they raise exceptions (NotImplementedError for MultiheadAttention with
// add_zero_attn, AttributeError when handed None for a tensor). Both decide a
// metric's status and its diagnostic, so a formula outcome carries them, with
// Python's exception class names and messages.

#ifndef TORCHSCAN_FORMULAS_FORMULA_OUTCOME_H_
#define TORCHSCAN_FORMULAS_FORMULA_OUTCOME_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace torchscan::formulas {

// The exception upstream would raise.
struct FormulaError {
  std::string type;  // Python class name: "NotImplementedError", ...
  std::string message;

  // "<type>: <message>", the crawler's diagnostic message.
  std::string ToString() const;

  bool operator==(const FormulaError&) const = default;
};

template <typename T>
struct FormulaOutcome {
  // Set unless `error` is.
  std::optional<T> value;
  // Warning texts in emission order (only when there is a value: upstream
  // drops a failed formula's warnings).
  std::vector<std::string> warnings;
  std::optional<FormulaError> error;

  static FormulaOutcome Value(T value, std::vector<std::string> warnings = {}) {
    FormulaOutcome outcome;
    outcome.value = std::move(value);
    outcome.warnings = std::move(warnings);
    return outcome;
  }
  static FormulaOutcome Error(FormulaError error) {
    FormulaOutcome outcome;
    outcome.error = std::move(error);
    return outcome;
  }

  bool ok() const { return !error.has_value(); }
};

// The prefix every "unsupported module type" warning starts with; the
// crawler looks for this text in warnings.
inline constexpr absl::string_view kModuleNotSupported =
    "Module type not supported";

// "Module type not supported: <type>".
std::string UnsupportedModuleWarning(absl::string_view type);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_FORMULA_OUTCOME_H_
