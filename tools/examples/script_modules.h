// Building TorchScript modules in C++ that are the same, to the crawler, as
// torch.nn modules scripted in Python: the same qualified class names,
// constants, attributes and parameters, with forward methods written in
// TorchScript. The built-in examples are made of them.

#ifndef TORCHSCAN_TOOLS_EXAMPLES_SCRIPT_MODULES_H_
#define TORCHSCAN_TOOLS_EXAMPLES_SCRIPT_MODULES_H_

#include <torch/csrc/jit/api/module.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace torchscan::examples {

class ScriptModuleBuilder {
 public:
  ScriptModuleBuilder();

  // A module of class `qualified_name` ("torch.nn.modules.linear.Linear" or
  // "examples.Block"), mangled when the name is already taken.
  torch::jit::Module New(const std::string& qualified_name);

  torch::jit::Module Linear(std::int64_t in, std::int64_t out,
                            bool bias = true);
  torch::jit::Module Conv2d(std::int64_t in, std::int64_t out,
                            std::int64_t kernel, std::int64_t stride = 1,
                            std::int64_t padding = 0, bool bias = true,
                            std::int64_t groups = 1);
  torch::jit::Module BatchNorm2d(std::int64_t features);
  torch::jit::Module LayerNorm(std::int64_t features);
  torch::jit::Module ReLU(bool inplace = false);
  torch::jit::Module GELU();
  torch::jit::Module Dropout(double p);
  torch::jit::Module MaxPool2d(std::int64_t kernel, std::int64_t stride,
                               std::int64_t padding);
  torch::jit::Module AdaptiveAvgPool2d(std::int64_t size);
  torch::jit::Module Flatten();
  // Children "0", "1", ... called in order.
  torch::jit::Module Sequential(
      const std::vector<torch::jit::Module>& children);

 private:
  std::shared_ptr<torch::jit::CompilationUnit> unit_;
};

}  // namespace torchscan::examples

#endif  // TORCHSCAN_TOOLS_EXAMPLES_SCRIPT_MODULES_H_
