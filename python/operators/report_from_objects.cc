#include "python/operators/report_from_objects.h"  // Python.h first

#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace torchscan::dispatch {

using report::Count;
using report::Json;
using report::JsonValue;

// report::MemberPath and report::IndexPath from the root down, into one
// string: a path is spelled for every metric (its checks take it), so
// without the copies of each level's prefix.
std::string PythonValue::path() const {
  absl::InlinedVector<const PythonValue*, 16> steps;
  for (const PythonValue* step = this; step != nullptr; step = step->parent_) {
    steps.push_back(step);
  }
  std::string path(steps.back()->key_);
  for (auto it = std::next(steps.rbegin()); it != steps.rend(); ++it) {
    const PythonValue& step = **it;
    if (!step.member_) {
      absl::StrAppend(&path, "[", step.index_, "]");
    } else if (path.empty()) {
      path.assign(step.key_.data(), step.key_.size());
    } else {
      absl::StrAppend(&path, ".", step.key_);
    }
  }
  return path;
}

absl::string_view PythonValue::Kind() const {
  if (is_null()) return "null";
  if (is_bool()) return "boolean";
  if (is_int()) return "integer";
  if (is_float()) return "float";
  if (is_str()) return "string";
  if (is_array()) return "array";
  return "object";
}

absl::Status PythonValue::Error(absl::string_view problem) const {
  return report::FieldError(path(), problem);
}

absl::Status PythonValue::Expected(absl::string_view what) const {
  return Error(absl::StrCat("expected ", what, ", got ", Kind()));
}

absl::string_view PythonValue::Text() const {
  return report_from_objects_internal::TextOf(object_);
}

Py_ssize_t PythonValue::size() const {
  return PyList_Check(object_) ? PyList_Size(object_) : PyTuple_Size(object_);
}

PyObject* PythonValue::Item(Py_ssize_t index) const {
  return PyList_Check(object_) ? PyList_GetItem(object_, index)
                               : PyTuple_GetItem(object_, index);
}

absl::Status PythonValue::ToJsonStatus(Json* out) const {
  if (!ToJson(object_, path(), out)) {
    return report_from_objects_internal::TakePythonError();
  }
  return absl::OkStatus();
}

std::optional<std::int64_t> PythonValue::SmallInt() const {
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(object_, &overflow);
  if (overflow != 0 || (value == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return std::nullopt;
  }
  return static_cast<std::int64_t>(value);
}

// Each read takes the common case natively; anything else (another type, an
// int beyond 64 bits) is JsonValue's own read of the value's JSON.

absl::StatusOr<std::string> PythonValue::String() const {
  if (is_str()) return std::string(Text());
  return ViaJson(&JsonValue::String);
}

absl::StatusOr<bool> PythonValue::Bool() const {
  if (is_bool()) return object_ == Py_True;
  return ViaJson(&JsonValue::Bool);
}

absl::StatusOr<Count> PythonValue::Integer() const {
  if (is_int()) {
    if (std::optional<std::int64_t> value = SmallInt()) return Count(*value);
  }
  return ViaJson(&JsonValue::Integer);
}

absl::StatusOr<Count> PythonValue::NonNegativeCount() const {
  if (is_int()) {
    std::optional<std::int64_t> value = SmallInt();
    if (value && *value >= 0) return Count(*value);
  }
  return ViaJson(&JsonValue::NonNegativeCount);
}

absl::StatusOr<std::int64_t> PythonValue::Index() const {
  if (is_int()) {
    std::optional<std::int64_t> value = SmallInt();
    if (value && *value >= 0) return *value;
  }
  return ViaJson(&JsonValue::Index);
}

absl::StatusOr<std::int64_t> PythonValue::Int64() const {
  if (is_int()) {
    if (std::optional<std::int64_t> value = SmallInt()) return *value;
  }
  return ViaJson(&JsonValue::Int64);
}

absl::StatusOr<double> PythonValue::Number() const {
  if (is_float()) return PyFloat_AsDouble(object_);
  if (is_int()) {
    if (std::optional<std::int64_t> value = SmallInt()) {
      return static_cast<double>(*value);
    }
  }
  return ViaJson(&JsonValue::Number);
}

namespace report_from_objects_internal {

absl::Status TakePythonError() {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  OwnedRef owned_type(type), owned_value(value), owned_traceback(traceback);
  std::string message = "a Python error";
  if (value != nullptr) {
    OwnedRef text(PyObject_Str(value));
    if (!text || !Utf8(text.get(), &message)) PyErr_Clear();
  }
  return absl::InvalidArgumentError(message);
}

absl::string_view TextOf(PyObject* text) {
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(text, &size);
  if (utf8 == nullptr) {
    // Not JSON data (CheckJsonData refuses a lone surrogate): no text.
    PyErr_Clear();
    return absl::string_view();
  }
  return absl::string_view(utf8, static_cast<std::size_t>(size));
}

absl::StatusOr<absl::string_view> KeyText(const PythonValue& object,
                                          PyObject* key) {
  if (!PyUnicode_Check(key)) {
    // The type's __name__: the stable ABI has no tp_name.
    OwnedRef name(PyObject_GetAttrString(
        reinterpret_cast<PyObject*>(Py_TYPE(key)), "__name__"));
    std::string type = "?";
    if (!name || !Utf8(name.get(), &type)) PyErr_Clear();
    return report::FieldError(
        object.path(), absl::StrCat("a dict key of type ", type, ", not str"));
  }
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(key, &size);
  if (utf8 == nullptr) {
    PyErr_Clear();
    return report::FieldError(object.path(), "a dict key that is not UTF-8");
  }
  return absl::string_view(utf8, static_cast<std::size_t>(size));
}

PyObject* MemberOf(const PythonValue& object, const char* key) {
  PyObject* name = KeyOf(key);
  if (name == nullptr) return nullptr;
  return PyDict_GetItemWithError(object.object(), name);
}

PyObject* MemberOf(const PythonValue& object, absl::string_view key) {
  OwnedRef name(PythonText(key));
  if (!name) return nullptr;
  return PyDict_GetItemWithError(object.object(), name.get());
}

absl::Status RejectUnknownKeys(const PythonValue& object,
                               absl::Span<const absl::string_view> known) {
  PyObject *key, *item;
  Py_ssize_t position = 0;
  while (PyDict_Next(object.object(), &position, &key, &item)) {
    TS_ASSIGN_OR_RETURN(const absl::string_view name, KeyText(object, key));
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return report::FieldError(report::MemberPath(object.path(), name),
                                "unknown field");
    }
  }
  return absl::OkStatus();
}

Json KeysOf(const PythonValue& object) {
  Json keys = Json::object();
  PyObject *key, *item;
  Py_ssize_t position = 0;
  while (PyDict_Next(object.object(), &position, &key, &item)) {
    keys[std::string(TextOf(key))] = nullptr;
  }
  return keys;
}

}  // namespace report_from_objects_internal

// JsonCodec<MetricValue>::Read's rules.
absl::StatusOr<report::MetricValue> PythonReader<report::MetricValue>::Read(
    const PythonValue& node) {
  if (node.is_int()) {
    TS_ASSIGN_OR_RETURN(Count count, node.Integer());
    return report::MetricValue(count);
  }
  if (node.is_float()) {
    const double number = PyFloat_AsDouble(node.object());
    if (!std::isfinite(number)) return node.Error("is not finite");
    return report::MetricValue(number);
  }
  if (node.is_str()) return report::MetricValue(std::string(node.Text()));
  return node.Expected("a number or null");
}

// JsonCodec<MetricMap>::Read's rules.
absl::StatusOr<report::MetricMap> PythonReader<report::MetricMap>::Read(
    const PythonValue& node) {
  if (!node.is_dict()) return node.Expected("an object");
  report::MetricMap metrics;
  TS_RETURN_IF_ERROR(report_from_objects_internal::ForEachMember(
      node,
      [&](absl::string_view name, const PythonValue& entry) -> absl::Status {
        TS_ASSIGN_OR_RETURN(report::MetricResult result,
                            PythonReader<report::MetricResult>::Read(entry));
        // NOTE [Paths spelled for errors only] in report_from_objects.h.
        if (!report::ValidateMetricValue(name, result, absl::string_view())
                 .ok()) {
          return report::ValidateMetricValue(name, result, entry.path());
        }
        metrics.Set(std::string(name), std::move(result));
        return absl::OkStatus();
      }));
  return metrics;
}

absl::StatusOr<report::ValueKind> PythonReader<report::ValueKind>::Read(
    const PythonValue& node) {
  if (node.is_str()) {
    absl::StatusOr<report::ValueKind> kind =
        report::ParseValueKind(node.Text());
    if (kind.ok()) return *kind;
  }
  return node.ViaJson(&report::JsonCodec<report::ValueKind>::Read);
}

absl::StatusOr<report::MappingKey> PythonReader<report::MappingKey>::Read(
    const PythonValue& node) {
  if (node.is_bool()) return report::MappingKey(node.object() == Py_True);
  if (node.is_int()) {
    TS_ASSIGN_OR_RETURN(Count value, node.Integer());
    return report::MappingKey(value);
  }
  if (node.is_str() && report::IsIdentifierKey(node.Text())) {
    return report::MappingKey(std::string(node.Text()));
  }
  return node.ViaJson(&report::JsonCodec<report::MappingKey>::Read);
}

absl::StatusOr<std::string> PythonRowReader<report::MetricStringCodec>::Read(
    const PythonValue& node) {
  if (node.is_str()) return std::string(node.Text());
  return node.ViaJson(&report::MetricStringCodec::Read);
}

absl::StatusOr<report::MetricStatus>
PythonRowReader<report::MetricStatusCodec>::Read(const PythonValue& node) {
  if (node.is_str()) {
    absl::StatusOr<report::MetricStatus> status =
        report::ParseMetricStatus(node.Text());
    if (status.ok()) return *status;
  }
  return node.ViaJson(&report::MetricStatusCodec::Read);
}

}  // namespace torchscan::dispatch
