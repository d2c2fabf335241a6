// The roofline's lookup in the device table this library was built with.
// Apart from roofline.cc, as device_table_builtin.cc is: the fuzzers, which
// compile report/*.cc outside Bazel, leave out the files named *_builtin.cc
// (the embedded table is a file Bazel generates).

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "report/device_table.h"
#include "report/roofline.h"

namespace torchscan::report {

absl::StatusOr<RooflineDevice> RooflineDeviceNamed(absl::string_view name) {
  const DeviceModel* model = FindDeviceModel(name);
  if (model == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown device model '", name,
        "': the device table (exact names only) has ",
        absl::StrJoin(BuiltinDeviceTable().CanonicalNames(), ", ")));
  }
  return RooflineDeviceOf(*model);
}

}  // namespace torchscan::report
