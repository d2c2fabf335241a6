// The table this library was built with: device_table.json, embedded by
// report/BUILD.bazel. Apart from device_table.cc so that the fuzzers, which
// compile report/*.cc outside Bazel, can leave out the generated include.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/device_table.h"

namespace torchscan::report {
namespace {

// The bytes of python/torchscan_dispatch/device_table.json (a raw string
// literal made at build time, report/BUILD.bazel).
constexpr absl::string_view kEmbeddedTable =
#include "report/device_table.inc"
    ;  // NOLINT(whitespace/semicolon)

constexpr absl::string_view kEmbeddedTableFile =
    "python/torchscan_dispatch/device_table.json";

}  // namespace

const DeviceTable& BuiltinDeviceTable() {
  // NOTE [The embedded table is checked when it is built into a test]
  // device_table_test reads the embedded bytes, so a malformed table fails
  // the tests, never a user: reaching the abort below is a build that
  // skipped them.
  static const DeviceTable* const table = [] {
    absl::StatusOr<DeviceTable> parsed =
        ParseDeviceTable(kEmbeddedTable, kEmbeddedTableFile);
    if (!parsed.ok()) {
      std::fprintf(stderr, "torchscan: the embedded device table: %s\n",
                   std::string(parsed.status().message()).c_str());
      std::abort();
    }
    return new DeviceTable(*std::move(parsed));
  }();
  return *table;
}

const DeviceModel* FindDeviceModel(absl::string_view name) {
  return BuiltinDeviceTable().Find(name);
}

}  // namespace torchscan::report
