#include "report/render/type_costs.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "report/count.h"

namespace torchscan::report::render {
namespace {

// One module path, its calls summed.
struct PathCost {
  std::string type;
  std::int64_t calls = 0;
  bool partial = false;
  std::map<std::string, Count> by_operator;
};

// The nearest recorded path above `path` ("" is the root's); nullptr for
// the root itself or when nothing above is recorded.
const std::string* Parent(const std::map<std::string, PathCost>& paths,
                          const std::string& path) {
  std::string up = path;
  while (!up.empty()) {
    const std::size_t dot = up.rfind('.');
    up = dot == std::string::npos ? "" : up.substr(0, dot);
    auto it = paths.find(up);
    if (it != paths.end()) return &it->first;
  }
  return nullptr;
}

absl::Status AddAll(std::map<std::string, Count>& sum,
                    const std::map<std::string, Count>& values) {
  for (const auto& [name, value] : values) {
    TS_RETURN_IF_ERROR(AddCount(sum[name], value, name));
  }
  return absl::OkStatus();
}

absl::StatusOr<Count> Total(const std::map<std::string, Count>& values) {
  Count total = 0;
  for (const auto& [name, value] : values) {
    TS_RETURN_IF_ERROR(AddCount(total, value, "FLOPs"));
  }
  return total;
}

}  // namespace

absl::StatusOr<TypeCosts> CostsByModuleType(const AnalysisReport& report) {
  if (!report.layer_operator_flops) {
    return absl::InvalidArgumentError(
        "the report has no layer_operator_flops (structure mode or a "
        "TorchScan 0.2 report)");
  }
  std::map<std::pair<std::string, std::int64_t>, std::string> types;
  for (const LayerReport& layer : report.layers) {
    types[{layer.path, layer.call_index}] = layer.type;
  }
  std::map<std::string, PathCost> paths;
  for (const LayerOperatorFlops& call : *report.layer_operator_flops) {
    PathCost& path = paths[call.path];
    if (path.calls == 0) {
      auto type = types.find({call.path, call.call_index});
      path.type = type == types.end() ? "" : type->second;
    }
    ++path.calls;
    path.partial |= call.total.status() != MetricStatus::kComplete;
    TS_RETURN_IF_ERROR(AddAll(path.by_operator, call.by_operator));
  }
  // Each path's FLOPs by operator, less its nearest recorded descendants'.
  std::map<std::string, std::map<std::string, Count>> below;
  for (const auto& [name, path] : paths) {
    if (const std::string* parent = Parent(paths, name)) {
      TS_RETURN_IF_ERROR(AddAll(below[*parent], path.by_operator));
    }
  }
  std::map<std::string, TypeCost> by_type;
  TypeCosts costs;
  for (const auto& [name, path] : paths) {
    TypeCost& type = by_type[path.type];
    type.type = path.type;
    ++type.modules;
    type.calls += path.calls;
    if (path.partial) type.status = MetricStatus::kPartial;
    for (const auto& [op, value] : path.by_operator) {
      const Count inner = below[name][op];
      const Count self = value > inner ? value - inner : 0;
      TS_RETURN_IF_ERROR(AddCount(type.self_flops, self, "self FLOPs"));
      TS_RETURN_IF_ERROR(
          AddCount(costs.operator_types[op][path.type], self, op));
    }
    // Inclusive FLOPs count only outside another module of the same type.
    bool nested = false;
    for (const std::string* up = Parent(paths, name); up != nullptr && !nested;
         up = Parent(paths, *up)) {
      nested = paths.at(*up).type == path.type;
    }
    if (nested) continue;
    TS_RETURN_IF_ERROR(AddAll(type.by_operator, path.by_operator));
  }
  for (auto& [name, type] : by_type) {
    TS_ASSIGN_OR_RETURN(type.flops, Total(type.by_operator));
    costs.types.push_back(std::move(type));
  }
  std::stable_sort(
      costs.types.begin(), costs.types.end(),
      [](const TypeCost& a, const TypeCost& b) { return a.flops > b.flops; });
  return costs;
}

}  // namespace torchscan::report::render
