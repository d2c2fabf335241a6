// How the `torchscan` command turns an error into its one-line message.
//
// PyTorch's errors are long: a TorchScript interpreter error is the
// interpreter's traceback followed by the original error, a loader error may
// span several lines. The command line owes the user one line that names the
// file or argument and the cause (docs/cli.md, "Exit codes"). Torch-free;
// python/torchscan_dispatch/cli.py applies the same rule, so both command
// lines print the same line for the same input.

#ifndef TORCHSCAN_TOOLS_CLI_ERRORS_H_
#define TORCHSCAN_TOOLS_CLI_ERRORS_H_

#include <string>

#include "absl/strings/string_view.h"

namespace torchscan::cli {

// The line of `message` that says what went wrong: the last non-blank line
// of a TorchScript interpreter error (one that holds "Traceback of
// TorchScript"), else the first non-blank line, stripped; "" for a blank
// message.
std::string OneLineCause(absl::string_view message);

}  // namespace torchscan::cli

#endif  // TORCHSCAN_TOOLS_CLI_ERRORS_H_
