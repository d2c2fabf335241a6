#include "python/operators/report_objects.h"  // Python.h first

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"

namespace torchscan::dispatch {

// Keyed by the literal's address: a table's names are static constexpr
// literals, so each row's key is looked up, never made again. A small
// direct-mapped array of recent literals answers most look-ups before the
// map (a report of a 69-module crawl asks for about 3,500 keys). Made and
// used under the GIL.
PyObject* KeyOf(const char* name) {
  struct Slot {
    const char* name = nullptr;
    PyObject* key = nullptr;
  };
  static Slot recent[1024];
  Slot& slot =
      recent[(reinterpret_cast<std::uintptr_t>(name) * 0x9E3779B97F4A7C15ull) >>
             54];
  if (slot.name == name) return slot.key;
  static auto* const keys = new absl::flat_hash_map<const char*, PyObject*>();
  auto [it, inserted] = keys->try_emplace(name, nullptr);
  if (inserted) {
    it->second = PyUnicode_InternFromString(name);
    if (it->second == nullptr) {
      keys->erase(it);
      return nullptr;
    }
  }
  slot = {name, it->second};
  return it->second;
}

// NOTE [Report texts made once]
// A report repeats a few short texts thousands of times: statuses, metric
// units, scopes and methods, module labels and type names. Each became a new
// str, decoded and allocated, then freed with the report (about 0.6 M
// instructions per report of a 69-module crawl). A str is immutable, so one
// object per text serves every report: texts up to kCachedTextBytes are kept,
// up to kCachedTexts of them for the process; past that, texts are made as
// before. Made and used under the GIL.
constexpr std::size_t kCachedTextBytes = 64;
constexpr std::size_t kCachedTexts = 4096;

PyObject* PythonText(absl::string_view text) {
  const auto make = [](absl::string_view made) {
    return PyUnicode_FromStringAndSize(made.data(),
                                       static_cast<Py_ssize_t>(made.size()));
  };
  if (text.size() > kCachedTextBytes) return make(text);
  static auto* const texts = new absl::flat_hash_map<std::string, PyObject*>();
  if (auto it = texts->find(text); it != texts->end()) {
    return Py_NewRef(it->second);
  }
  PyObject* made = make(text);
  if (made == nullptr || texts->size() >= kCachedTexts) return made;
  texts->emplace(std::string(text), Py_NewRef(made));
  return made;
}

PyObject* PythonCodec<report::MetricResult>::Write(
    const report::MetricResult& metric) {
  namespace internal = report_objects_internal;
  constexpr auto& kRows = report::MetricResult::kFields;
  constexpr auto& kValue = std::get<1>(kRows);
  constexpr auto& kKnownValue = std::get<2>(kRows);
  static_assert(absl::string_view(kValue.name) == "value" &&
                absl::string_view(kKnownValue.name) == "known_value");
  struct Kind {
    report::MetricStatus status = report::MetricStatus::kUnavailable;
    std::string unit, scope, method;
    PyObject* dict = nullptr;  // a metric of this kind, kept
  };
  static Kind kinds[64];
  Kind& kind =
      kinds[absl::HashOf(static_cast<int>(metric.status()), metric.unit(),
                         metric.scope(), metric.method()) %
            std::size(kinds)];
  if (kind.dict != nullptr && kind.status == metric.status() &&
      kind.unit == metric.unit() && kind.scope == metric.scope() &&
      kind.method == metric.method()) {
    OwnedRef dict(PyDict_Copy(kind.dict));
    if (!dict || !internal::WriteRow(kValue, metric, dict.get()) ||
        !internal::WriteRow(kKnownValue, metric, dict.get())) {
      return nullptr;
    }
    return dict.release();
  }
  OwnedRef dict(internal::NewRecordDict<report::MetricResult>());
  if (!dict || !internal::WriteRows(metric, dict.get())) return nullptr;
  PyObject* kept = PyDict_Copy(dict.get());
  if (kept == nullptr) return nullptr;
  Py_XDECREF(kind.dict);
  kind = {metric.status(), metric.unit(), metric.scope(), metric.method(),
          kept};
  return dict.release();
}

PyObject* PythonCount(report::Count value) {
  if (value >= std::numeric_limits<std::int64_t>::min() &&
      value <= std::numeric_limits<std::int64_t>::max()) {
    return PyLong_FromLongLong(static_cast<long long>(value));
  }
  if (value > 0 && value <= std::numeric_limits<std::uint64_t>::max()) {
    return PyLong_FromUnsignedLongLong(
        static_cast<unsigned long long>(static_cast<std::uint64_t>(value)));
  }
  // Beyond 64 bits: through the decimal digits, as FromJson reads them.
  return PyLong_FromString(report::CountToString(value).c_str(), nullptr, 10);
}

PyObject* PythonDouble(double value) {
  if (std::isnan(value)) return PyUnicode_FromString("nan");
  if (std::isinf(value)) {
    return PyUnicode_FromString(value > 0 ? "inf" : "-inf");
  }
  return PyFloat_FromDouble(value);
}

}  // namespace torchscan::dispatch
