#include "report/device_table.h"

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "report/precision.h"

namespace torchscan::report {
namespace {

// NOTE [Python's whitespace in ASCII]
// normalize_device_name splits on Python's \s, str.isspace(): in ASCII that
// is space, \t \n \v \f \r and also the information separators \x1c to
// \x1f, which absl::ascii_isspace does not count. Both sides treat the same
// ASCII bytes as whitespace, so they agree on every ASCII name.
bool IsPythonSpace(char c) {
  return absl::ascii_isspace(static_cast<unsigned char>(c)) ||
         (c >= '\x1c' && c <= '\x1f');
}

bool IsAscii(absl::string_view text) {
  for (const char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<double> PositiveNumberCodec::Read(const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(const double value, node.Number());
  if (!(value > 0) || std::isinf(value)) return node.Error("is not positive");
  return value;
}

Json PositiveNumberOrNullCodec::Write(const std::optional<double>& value) {
  return value ? Json(*value) : Json(nullptr);
}

absl::StatusOr<std::optional<double>> PositiveNumberOrNullCodec::Read(
    const JsonValue& node) {
  if (node.is_null()) return std::optional<double>();
  TS_ASSIGN_OR_RETURN(const double value, PositiveNumberCodec::Read(node));
  return std::optional<double>(value);
}

std::vector<std::string> DeviceModel::Names() const {
  std::vector<std::string> names = {name};
  names.insert(names.end(), reported_names.begin(), reported_names.end());
  return names;
}

absl::Status DeviceModel::Validate(absl::string_view path) const {
  if (source.empty()) {
    return FieldError(MemberPath(path, "source"), "is empty: name the source");
  }
  for (const std::string& each : Names()) {
    if (NormalizeDeviceName(each).empty() || !IsAscii(each)) {
      return FieldError(
          MemberPath(path, each == name ? "name" : "reported_names"),
          absl::StrCat("'", each, "' is not a non-empty ASCII name"));
    }
  }
  if (peak_flops.empty()) {
    return FieldError(MemberPath(path, "peak_flops"), "lists no precision");
  }
  for (const auto& [precision, peak] : peak_flops) {
    const std::optional<Precision> known = PrecisionFromName(precision);
    if (!known || *known == Precision::kUnknown) {
      return FieldError(MemberPath(path, "peak_flops"),
                        absl::StrCat("unknown precision '", precision,
                                     "' (fp64, fp32, tf32, bf16, fp16, fp8, "
                                     "int8)"));
    }
  }
  return absl::OkStatus();
}

const DeviceModel* DeviceTable::Find(absl::string_view name) const {
  const std::string wanted = NormalizeDeviceName(name);
  for (const DeviceModel& device : devices) {
    for (const std::string& each : device.Names()) {
      if (NormalizeDeviceName(each) == wanted) return &device;
    }
  }
  return nullptr;
}

std::vector<std::string> DeviceTable::CanonicalNames() const {
  std::vector<std::string> names;
  names.reserve(devices.size());
  for (const DeviceModel& device : devices) names.push_back(device.name);
  return names;
}

absl::Status DeviceTable::Validate(absl::string_view path) const {
  std::map<std::string, std::size_t> rows;  // normalised name -> row
  for (std::size_t row = 0; row < devices.size(); ++row) {
    for (const std::string& each : devices[row].Names()) {
      const auto [at, added] = rows.emplace(NormalizeDeviceName(each), row);
      if (!added) {
        return FieldError(
            absl::StrCat(MemberPath(path, "devices"), "[", row, "]"),
            absl::StrCat("the name '", each, "' names two rows (devices[",
                         at->second, "] too)"));
      }
    }
  }
  return absl::OkStatus();
}

std::string NormalizeDeviceName(absl::string_view name) {
  std::string normalized;
  normalized.reserve(name.size());
  bool space = false;
  for (const char c : name) {
    if (IsPythonSpace(c)) {
      space = true;
      continue;
    }
    if (space && !normalized.empty()) normalized.push_back(' ');
    space = false;
    normalized.push_back(absl::ascii_tolower(static_cast<unsigned char>(c)));
  }
  return normalized;
}

absl::StatusOr<DeviceTable> ParseDeviceTable(absl::string_view text,
                                             absl::string_view file) {
  absl::StatusOr<Json> document = ParseJson(text);
  if (!document.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": ", document.status().message()));
  }
  absl::StatusOr<DeviceTable> table =
      FromJson<DeviceTable>(JsonValue(*document, ""));
  if (!table.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": ", table.status().message()));
  }
  return table;
}

}  // namespace torchscan::report
