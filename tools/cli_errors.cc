#include "tools/cli_errors.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace torchscan::cli {

std::string OneLineCause(absl::string_view message) {
  std::vector<absl::string_view> lines;
  for (absl::string_view line : absl::StrSplit(message, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty()) lines.push_back(line);
  }
  if (lines.empty()) return "";
  const bool interpreter_traceback =
      absl::StrContains(message, "Traceback of TorchScript");
  return std::string(interpreter_traceback ? lines.back() : lines.front());
}

}  // namespace torchscan::cli
