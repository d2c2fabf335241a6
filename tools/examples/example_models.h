// Built-in example models, defined in C++ so the command line can run them
// with no downloads.

#ifndef TORCHSCAN_TOOLS_EXAMPLES_EXAMPLE_MODELS_H_
#define TORCHSCAN_TOOLS_EXAMPLES_EXAMPLE_MODELS_H_

#include <torch/nn/module.h>
#include <torch/types.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace torchscan::examples {

struct ExampleModel {
  std::string name;
  std::string description;
  std::shared_ptr<torch::nn::Module> module;
  // Runs one forward call on a batch of one.
  std::function<torch::Tensor()> forward;
};

std::vector<std::string> ExampleNames();
absl::StatusOr<ExampleModel> MakeExample(const std::string& name);

}  // namespace torchscan::examples

#endif  // TORCHSCAN_TOOLS_EXAMPLES_EXAMPLE_MODELS_H_
