// The crawl report's per-layer operator FLOPs from what a counting session
// counted: where the dispatcher's own result (dispatch::LayerCallFlops) meets
// the crawl report (report::LayerOperatorFlops). Torch-free; used by the crawl
// front ends (torchscan/script_module_crawler.cc and python/operators).

#ifndef TORCHSCAN_TORCHSCAN_LAYER_CALL_FLOPS_H_
#define TORCHSCAN_TORCHSCAN_LAYER_CALL_FLOPS_H_

#include <cstddef>
#include <map>

#include "report/analysis_report.h"
#include "torchscan_dispatch/layer_call_flops.h"

namespace torchscan {

// Each layer call's `total` and `by_operator`, keyed by layer index as the
// session keyed them; `path` and `call_index` stay empty (crawl assembly
// takes them from the layer).
std::map<std::size_t, report::LayerOperatorFlops> ToLayerOperatorFlops(
    std::map<std::size_t, dispatch::LayerCallFlops> flops);

}  // namespace torchscan

#endif  // TORCHSCAN_TORCHSCAN_LAYER_CALL_FLOPS_H_
