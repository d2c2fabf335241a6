// A small analysis with hand-set numbers, shared by the render tests.
//
// SmallCnnReport() is a model "Net" (root "") whose forward runs
//   features   Sequential
//     features.0  Conv2d   84 parameters (336 bytes), module 1000 FLOPs
//                          (500 MACs), operators 1100 FLOPs
//     features.1  ReLU     module 200 FLOPs, operators partial 0 (aten.relu
//                          has no formula)
//   pool       AdaptiveAvgPool2d  module FLOPs unavailable (a module
//                          diagnostic), operators 0 (partial)
//   head       Linear   40 parameters (160 bytes) + a 4-element buffer (16
//                          bytes), module 300 FLOPs (150 MACs), operators 280
// and 20 FLOPs of its own (an aten.add in Net.forward): 1400 operator FLOPs
// in all, partial.

#ifndef TORCHSCAN_REPORT_RENDER_RENDER_TEST_SUPPORT_H_
#define TORCHSCAN_REPORT_RENDER_RENDER_TEST_SUPPORT_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "report/analysis_report.h"
#include "report/count.h"
#include "report/layer_report.h"
#include "report/metric_result.h"

namespace torchscan::report::render::testing {

MetricResult Flops(Count value, absl::string_view scope = "module_call");
MetricResult PartialFlops(Count known, absl::string_view scope = "module_call");

// A layer call with `calls` = 1 and TorchScan's name and depth.
LayerReport Layer(const std::string& path, const std::string& type,
                  std::int64_t call_index = 0);
// Sets module_flops and macs (complete).
void SetModuleFormulas(LayerReport& layer, Count flops, Count macs);

LayerOperatorFlops CallOperatorFlops(const std::string& path,
                                     MetricResult total,
                                     std::map<std::string, Count> by_operator,
                                     std::int64_t call_index = 0);

// The ten totals, computed from the layers and operator_flops as TorchScan
// does (a test helper: the render tests check against hand numbers).
void SetTotals(AnalysisReport& report);

AnalysisReport SmallCnnReport();

}  // namespace torchscan::report::render::testing

#endif  // TORCHSCAN_REPORT_RENDER_RENDER_TEST_SUPPORT_H_
