// Built-in example models, defined in C++ as TorchScript modules (see
// script_modules.h), so the command line analyses them with no downloads,
// through the same front end as a saved model file.

#ifndef TORCHSCAN_TOOLS_EXAMPLES_EXAMPLE_MODELS_H_
#define TORCHSCAN_TOOLS_EXAMPLES_EXAMPLE_MODELS_H_

#include <torch/csrc/jit/api/module.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace torchscan::examples {

struct ExampleModel {
  std::string name;
  std::string description;
  torch::jit::Module module;
  // One input shape per forward argument, without the batch dimension.
  std::vector<std::vector<std::int64_t>> input_shapes;
};

std::vector<std::string> ExampleNames();
// Deterministic weights (seeded), so reports are reproducible.
absl::StatusOr<ExampleModel> MakeExample(const std::string& name);

}  // namespace torchscan::examples

#endif  // TORCHSCAN_TOOLS_EXAMPLES_EXAMPLE_MODELS_H_
