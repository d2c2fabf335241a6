// Registration of our own `torchscan::` control operators at load time.
//
// A second copy of the library in one process (a wheel and a checkout both
// loaded) finds the operators already defined and keeps the first copy's;
// any other failure is reported on stderr rather than thrown inside the
// dynamic loader, where an exception would abort the process.

#ifndef TORCHSCAN_DISPATCH_OWN_OPERATORS_H_
#define TORCHSCAN_DISPATCH_OWN_OPERATORS_H_

#include <torch/library.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace torchscan::dispatch {

class OwnOperators {
 public:
  // `define` defines the operators named `names` on the library it gets;
  // each also passes the counting key untouched. `kind` is DEF for the one
  // block that owns the namespace, FRAGMENT for the others.
  OwnOperators(torch::Library::Kind kind, std::vector<std::string> names,
               const std::function<void(torch::Library&)>& define,
               const char* file, std::uint32_t line);

 private:
  std::optional<torch::Library> definitions_;
  std::optional<torch::Library> passthrough_;
};

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_OWN_OPERATORS_H_
