#include "formulas/formula_outcome.h"

#include "absl/strings/str_cat.h"

namespace torchscan::formulas {

std::string FormulaError::ToString() const {
  return absl::StrCat(type, ": ", message);
}

std::string UnsupportedModuleWarning(absl::string_view type) {
  return absl::StrCat(kModuleNotSupported, ": ", type);
}

}  // namespace torchscan::formulas
