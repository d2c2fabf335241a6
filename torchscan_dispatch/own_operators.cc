#include "torchscan_dispatch/own_operators.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <iostream>

#include "torchscan_dispatch/dispatch_key.h"

namespace torchscan::dispatch {

OwnOperators::OwnOperators(torch::Library::Kind kind,
                           std::vector<std::string> names,
                           const std::function<void(torch::Library&)>& define,
                           const char* file, std::uint32_t line) {
  if (names.empty()) return;
  const std::string first = std::string(kOwnNamespace) + "::" + names.front();
  if (c10::Dispatcher::singleton().findSchema({first, ""}).has_value()) {
    return;  // another copy of this library registered them first
  }
  try {
    definitions_.emplace(kind, kOwnNamespace, std::nullopt, file, line);
    define(*definitions_);
    passthrough_.emplace(torch::Library::IMPL, kOwnNamespace, kCountingKey,
                         file, line);
    for (const std::string& name : names) {
      passthrough_->impl(name.c_str(), torch::CppFunction::makeFallthrough());
    }
  } catch (const c10::Error& error) {
    passthrough_.reset();
    definitions_.reset();
    std::cerr << "torchscan_dispatch: registering operators " << first
              << "... failed: " << error.what_without_backtrace() << "\n";
  }
}

}  // namespace torchscan::dispatch
