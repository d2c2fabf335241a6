#include "tools/examples/example_models.h"

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace torchscan::examples {
namespace {

ExampleModel Mlp() {
  auto mlp = torch::nn::Sequential(
      torch::nn::Linear(784, 256), torch::nn::ReLU(),
      torch::nn::Linear(256, 64), torch::nn::ReLU(), torch::nn::Linear(64, 10));
  torch::Tensor input = torch::randn({1, 784});
  return ExampleModel{"mlp", "784-256-64-10 multilayer perceptron", mlp.ptr(),
                      [mlp, input]() mutable { return mlp->forward(input); }};
}

}  // namespace

std::vector<std::string> ExampleNames() { return {"mlp"}; }

absl::StatusOr<ExampleModel> MakeExample(const std::string& name) {
  if (name == "mlp") return Mlp();
  return absl::NotFoundError(
      absl::StrCat("unknown example '", name,
                   "'; choose one of: ", absl::StrJoin(ExampleNames(), ", ")));
}

}  // namespace torchscan::examples
