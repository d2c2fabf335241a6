#include "torchscan/layer_call_flops.h"

#include <utility>

namespace torchscan {

std::map<std::size_t, report::LayerOperatorFlops> ToLayerOperatorFlops(
    std::map<std::size_t, dispatch::LayerCallFlops> flops) {
  std::map<std::size_t, report::LayerOperatorFlops> result;
  for (auto& [layer, call] : flops) {
    result[layer] =
        report::LayerOperatorFlops{.total = std::move(call.total),
                                   .by_operator = std::move(call.by_operator)};
  }
  return result;
}

}  // namespace torchscan
