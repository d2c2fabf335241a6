// What the `torchscan` command reads from its user: option values and model
// files, each turned into a value or an error that names the option or file
// and the problem. Kept apart from main() so that tests and the fuzzer
// (cli_inputs_fuzz_test.cc) exercise exactly what the command runs.

#ifndef TORCHSCAN_TOOLS_CLI_INPUTS_H_
#define TORCHSCAN_TOOLS_CLI_INPUTS_H_

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <torch/csrc/jit/api/module.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace torchscan::cli {

// "3,224,224" or "3,224,224;16" (one shape per input, without the batch
// dimension): decimal digits (surrounding blanks allowed), at least one
// dimension per input.
absl::StatusOr<std::vector<std::vector<std::int64_t>>> ParseInputShapes(
    absl::string_view text);

// "float32" or "float32;int64" (one per input; "torch." prefix and case
// ignored). Empty text is no dtypes.
absl::StatusOr<std::vector<c10::ScalarType>> ParseDtypes(
    absl::string_view text);

// A PyTorch device string ("cpu", "meta", "cuda:1").
absl::StatusOr<c10::Device> ParseDevice(absl::string_view text);

// The whole file, or NotFound / PermissionDenied naming it.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// A TorchScript module saved with torch.jit.save; any failure of PyTorch's
// loader (a missing file, a file that is not a TorchScript archive, a
// corrupted one) is an InvalidArgument error naming the file.
absl::StatusOr<torch::jit::Module> LoadScriptModuleFile(
    const std::string& path);

}  // namespace torchscan::cli

#endif  // TORCHSCAN_TOOLS_CLI_INPUTS_H_
