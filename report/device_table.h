// The device table: what each accelerator can do at best, and where those
// figures come from, as C++ reads it.
//
// One declaration: python/torchscan_dispatch/device_table.json. Python's
// torchscan_dispatch.devices builds DEVICES from it, and this library embeds
// the same bytes when it is built, so a C++ caller (a roofline of a
// FlopCountingGuard's report, `torchscan roofline --device-model NAME`)
// finds the rows Python finds, by the same names. What each figure means
// (dense peaks, fp32 against tf32, both directions of the interconnect) is
// said once, in devices.py's docstring.
//
//   const DeviceModel* h100 = FindDeviceModel("NVIDIA H100 80GB HBM3");
//   h100->name;                     // "H100 SXM"
//   h100->peak_flops.at("bf16");    // 989.5e12 FLOP/s
//   FindDeviceModel("H100");        // nullptr: which H100?
//
// Names. A row answers to its canonical name ("H100 SXM") and the names
// torch.cuda.get_device_name() reports for it ("NVIDIA H100 80GB HBM3").
// A name is compared after NormalizeDeviceName and must then equal one of
// them exactly: a name only like a known one (an "L40S" is not an "L4", an
// "H100 NVL" is not an "H100 SXM") finds nothing, never a near match.
//
// One difference from Python's normalize_device_name: Python folds case
// with Unicode NFKC and casefold(), and treats every Unicode whitespace
// character as whitespace; C++ folds ASCII letters only and treats the
// ASCII whitespace Python does (space, \t \n \v \f \r and \x1c to \x1f) as
// whitespace. Every name of the table is ASCII (ParseDeviceTable refuses
// another), so the two agree on every ASCII input; a non-ASCII input that
// Python maps onto an ASCII name (full-width letters "ＮＶＩＤＩＡ Ｌ４", a
// no-break space, the Kelvin sign) finds a row in Python and nothing here.

#ifndef TORCHSCAN_REPORT_DEVICE_TABLE_H_
#define TORCHSCAN_REPORT_DEVICE_TABLE_H_

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/field_table.h"
#include "report/json_io.h"
#include "report/json_reader.h"

namespace torchscan::report {

// A JSON number greater than 0 and finite (no "inf" string, which a double
// field reads: a rate is finite), else "<path>: is not positive".
struct PositiveNumberCodec {
  static Json Write(double value) { return value; }
  static absl::StatusOr<double> Read(const JsonValue& node);
};

// PositiveNumberCodec, or JSON null for nullopt.
struct PositiveNumberOrNullCodec {
  static Json Write(const std::optional<double>& value);
  static absl::StatusOr<std::optional<double>> Read(const JsonValue& node);
};

// One device model of the table: torchscan_dispatch.devices.DeviceSpec.
// Its JSON: {"name", "reported_names", "peak_flops": {precision: FLOP/s},
// "memory_bandwidth", "interconnect_bandwidth": bytes/s or null, "source",
// "note"?}; unknown members are refused.
struct DeviceModel {
  // Canonical: "H100 SXM".
  std::string name;
  // What torch.cuda.get_device_name() reports for the model.
  std::vector<std::string> reported_names;
  // Precision (PrecisionName: "fp64", ..., "int8"; never "unknown") ->
  // dense peak FLOP/s. A precision the row does not list has no peak.
  std::map<std::string, double> peak_flops;
  // Bytes per second of the device's own memory.
  double memory_bandwidth = 0;
  // Bytes per second between devices of one node, both directions; nullopt
  // where the source gives none.
  std::optional<double> interconnect_bandwidth;
  // The datasheet the figures come from.
  std::string source;
  std::string note;

  // The canonical name, then the reported names.
  std::vector<std::string> Names() const;

  bool operator==(const DeviceModel&) const = default;
  // Names and the source are not empty, every name is ASCII, peak_flops
  // lists at least one precision and only the table's precisions.
  absl::Status Validate(absl::string_view path) const;
  static constexpr auto kFields = std::make_tuple(
      Field("name", &DeviceModel::name),
      Field("reported_names", &DeviceModel::reported_names),
      FieldAs<MapOf<PositiveNumberCodec>>("peak_flops",
                                          &DeviceModel::peak_flops),
      FieldAs<PositiveNumberCodec>("memory_bandwidth",
                                   &DeviceModel::memory_bandwidth),
      FieldAs<PositiveNumberOrNullCodec>("interconnect_bandwidth",
                                         &DeviceModel::interconnect_bandwidth),
      Field("source", &DeviceModel::source),
      Field("note", &DeviceModel::note, kOptional));
};

// The whole table: {"about": what it is, "devices": [rows]}.
struct DeviceTable {
  std::string about;
  std::vector<DeviceModel> devices;

  // The row one of whose names equals `name` after NormalizeDeviceName,
  // or nullptr.
  const DeviceModel* Find(absl::string_view name) const;
  // The rows' canonical names, in the table's order.
  std::vector<std::string> CanonicalNames() const;

  bool operator==(const DeviceTable&) const = default;
  // No name names two rows (after normalisation).
  absl::Status Validate(absl::string_view path) const;
  static constexpr auto kFields =
      std::make_tuple(Field("about", &DeviceTable::about),
                      Field("devices", &DeviceTable::devices));
};

// The form names are compared in: ASCII letters lower-cased, runs of
// whitespace made one space, ends stripped. Nothing else: no substrings, no
// dropped words (see the file comment for non-ASCII input).
std::string NormalizeDeviceName(absl::string_view name);

// The table in JSON `text`; an error names `file` and the path of the bad
// value ("device_table.json: devices[3].memory_bandwidth: is not
// positive").
absl::StatusOr<DeviceTable> ParseDeviceTable(absl::string_view text,
                                             absl::string_view file);

// The table this library was built with (device_table.json, embedded).
const DeviceTable& BuiltinDeviceTable();

// BuiltinDeviceTable().Find(name).
const DeviceModel* FindDeviceModel(absl::string_view name);

}  // namespace torchscan::report

#endif  // TORCHSCAN_REPORT_DEVICE_TABLE_H_
