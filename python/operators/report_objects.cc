#include "python/operators/report_objects.h"  // Python.h first

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace torchscan::dispatch {

// Keyed by the literal's address: a table's names are static constexpr
// literals, so each row's key is looked up, never made again. Made and
// used under the GIL.
PyObject* KeyOf(const char* name) {
  static auto* const keys = new absl::flat_hash_map<const char*, PyObject*>();
  auto [it, inserted] = keys->try_emplace(name, nullptr);
  if (inserted) {
    it->second = PyUnicode_InternFromString(name);
    if (it->second == nullptr) {
      keys->erase(it);
      return nullptr;
    }
  }
  return it->second;
}

PyObject* PythonText(absl::string_view text) {
  return PyUnicode_FromStringAndSize(text.data(),
                                     static_cast<Py_ssize_t>(text.size()));
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
