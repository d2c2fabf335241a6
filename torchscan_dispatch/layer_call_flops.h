// LayerCallFlops: the operator FLOPs a counting session saw inside one layer
// call, inclusive of the layer calls nested in it.
//
// The session's own result type (CountingSession::BuildLayerCallFlops), made
// of the metric types at the bottom of report/ only: the dispatcher core does
// not know the crawl report. Crawl front ends turn it into the report's
// per-layer entry (report::LayerOperatorFlops in analysis_report.h), where the
// layer gives the path and call index (torchscan/layer_call_flops.h).

#ifndef TORCHSCAN_TORCHSCAN_DISPATCH_LAYER_CALL_FLOPS_H_
#define TORCHSCAN_TORCHSCAN_DISPATCH_LAYER_CALL_FLOPS_H_

#include <map>
#include <string>

#include "report/count.h"
#include "report/metric_result.h"

namespace torchscan::dispatch {

struct LayerCallFlops {
  // FLOPs under the operator method, per module call: complete unless an
  // operator without a formula (and not ignored), or a failing formula, ran
  // inside the call.
  report::MetricResult total = report::MetricResult::Unavailable({});
  // The counted FLOPs by operator report name ("aten.mm").
  std::map<std::string, report::Count> by_operator;

  bool operator==(const LayerCallFlops&) const = default;
};

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_TORCHSCAN_DISPATCH_LAYER_CALL_FLOPS_H_
