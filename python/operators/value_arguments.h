// What the operators Python calls with JSON documents share (crawl_ops.cc):
// a bad crawl record is a ValueError in Python, as in TorchScan 0.2, with the
// message naming the problem.

#ifndef TORCHSCAN_PYTHON_OPERATORS_VALUE_ARGUMENTS_H_
#define TORCHSCAN_PYTHON_OPERATORS_VALUE_ARGUMENTS_H_

#include <c10/util/Exception.h>

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "report/json_io.h"

namespace torchscan::dispatch {

// Throws ValueError(status.message()) unless `status` is OK.
inline void CheckValue(const absl::Status& status) {
  TORCH_CHECK_VALUE(status.ok(), std::string(status.message()));
}

// The JSON document `text`, or ValueError naming where it does not parse.
inline report::Json ParseJsonArgument(const std::string& text) {
  absl::StatusOr<report::Json> parsed = report::ParseJson(text);
  CheckValue(parsed.status());
  return *std::move(parsed);
}

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_VALUE_ARGUMENTS_H_
