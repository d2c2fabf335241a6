// Records with field tables (report/field_table.h) as Python objects, built
// straight from the typed record: ToPython(record) is the dict, list, str,
// int, float, bool or None that FromJson(report::ToJson(record)) gives
// (python_objects.h), type for type and key for key in the same order, with
// no JSON value built in between.
//
//   OwnedRef report(ToPython(analysis_report));  // a new reference
//   if (!report) return nullptr;                 // a Python error is set
//
// Every row of a table is written as its JSON writer writes it: Field and
// its presence rules (a required nullopt is None, an optional unset member
// is left out), When, FieldKeyedBy, FieldsOf, FieldGroup, Derived and
// Recomputed rows, and the kept unknown keys of kUnknownKeys, after the
// table's own. The member types of field_table.h's list are written
// natively: counts beyond 64 bits are exact ints, a double that is not
// finite is the string "inf", "-inf" or "nan", as JsonCodec<double> writes
// it. So are the codecs the reports use (the FieldAs codecs of
// field_table.h, MetricMap, MetricValue, ValueKind, ...).
//
// NOTE [Python objects straight from the field tables]
// The extension module used to hand a report to Python as report::ToJson
// (a tree of nlohmann values, one allocation per node and per key) and then
// FromJson, which walks that tree again to make the Python objects: about
// half of a crawl's report cost (docs/performance.md). Writing the Python
// objects from the table's rows makes each value once. It lives here, above
// report/, which stays free of Python. A type or a codec this header does
// not know (a JsonCodec or FieldAs codec with a Write of its own: a tagged
// union, a derived key) is written by its Json writer and that subtree
// converted by FromJson: correct for every record, native where the reports
// spend their time. Keys in the tables are C string literals, made into
// interned Python strings once (KeyOf). Everything here needs the GIL.

#ifndef TORCHSCAN_PYTHON_OPERATORS_REPORT_OBJECTS_H_
#define TORCHSCAN_PYTHON_OPERATORS_REPORT_OBJECTS_H_

// Python.h before any standard header (python_objects.h) ...
#include "python/operators/python_objects.h"
// ... then the others.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "report/analysis_report.h"
#include "report/count.h"
#include "report/field_table.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "report/metric_map.h"
#include "report/metric_result.h"
#include "report/report_diff.h"
#include "report/value_metadata.h"

namespace torchscan::dispatch {

// How values of type T are written as Python objects: a new reference, or
// nullptr with a Python error set. The primary template converts the
// value's JSON (report::JsonCodec<T>::Write); the specializations below
// write the types report::JsonCodec knows without it.
template <typename T>
struct PythonCodec {
  static PyObject* Write(const T& value) {
    return FromJson(report::JsonCodec<T>::Write(value));
  }
};

// How the FieldAs codec `Codec` writes a member as Python objects. The
// primary template converts Codec::Write's JSON; the specializations below
// write the codecs of field_table.h and those the reports use natively.
template <typename Codec>
struct PythonRowCodec {
  template <typename V>
  static PyObject* Write(const V& value) {
    return FromJson(Codec::Write(value));
  }
};

// `value` as Python objects (see the file comment).
template <typename T>
PyObject* ToPython(const T& value) {
  return PythonCodec<T>::Write(value);
}

// --- Scalars (report_objects.cc).

// The interned str of a table's key, made once per literal and kept for
// the process: a borrowed reference, or nullptr with an error set.
PyObject* KeyOf(const char* name);

// A str of UTF-8 text.
PyObject* PythonText(absl::string_view text);
// An exact int of any Count size.
PyObject* PythonCount(report::Count value);
// A float, or "inf", "-inf" or "nan" (NOTE [Non-finite floats in JSON]).
PyObject* PythonDouble(double value);

template <>
struct PythonCodec<bool> {
  static PyObject* Write(bool value) { return PyBool_FromLong(value); }
};

template <>
struct PythonCodec<std::string> {
  static PyObject* Write(const std::string& value) { return PythonText(value); }
};

template <>
struct PythonCodec<std::int64_t> {
  static PyObject* Write(std::int64_t value) {
    return PyLong_FromLongLong(value);
  }
};

template <>
struct PythonCodec<std::uint64_t> {
  static PyObject* Write(std::uint64_t value) {
    return PyLong_FromUnsignedLongLong(value);
  }
};

template <>
struct PythonCodec<report::Count> {
  static PyObject* Write(report::Count value) { return PythonCount(value); }
};

template <>
struct PythonCodec<double> {
  static PyObject* Write(double value) { return PythonDouble(value); }
};

template <>
struct PythonCodec<report::JsonNull> {
  static PyObject* Write(report::JsonNull) { return Py_NewRef(Py_None); }
};

template <report::NamedEnum E>
struct PythonCodec<E> {
  static PyObject* Write(E value) {
    for (const auto& [known, name] : EnumNames(value)) {
      if (known == value) return PythonText(name);
    }
    return Py_NewRef(Py_None);  // as JsonCodec<E>: a bug of its names table
  }
};

// --- Containers.

namespace report_objects_internal {

// Sets dict[key] = value, stealing `value`; false with an error set.
inline bool SetItem(PyObject* dict, PyObject* key, PyObject* value) {
  OwnedRef owned(value);
  return owned && PyDict_SetItem(dict, key, owned.get()) == 0;
}

// Sets dict[text] = value, stealing `value`, for a key that is not a
// table's literal (a map's).
inline bool SetText(PyObject* dict, absl::string_view text, PyObject* value) {
  OwnedRef owned(value);
  OwnedRef key(owned ? PythonText(text) : nullptr);
  return key && PyDict_SetItem(dict, key.get(), owned.get()) == 0;
}

// A list of `values`, each written by `write`.
template <typename V, typename Write>
PyObject* ListOf(const std::vector<V>& values, Write write) {
  OwnedRef list(PyList_New(static_cast<Py_ssize_t>(values.size())));
  if (!list) return nullptr;
  for (std::size_t i = 0; i < values.size(); ++i) {
    PyObject* item = write(values[i]);
    if (item == nullptr) return nullptr;
    // Steals `item`, into a slot PyList_New left empty.
    PyList_SetItem(list.get(), static_cast<Py_ssize_t>(i), item);
  }
  return list.release();
}

// A dict of (key, value) pairs of `values`, keys as `key_text` gives them
// and values as `write` does, in iteration order.
template <typename Pairs, typename KeyText, typename Write>
PyObject* DictOf(const Pairs& values, KeyText key_text, Write write) {
  OwnedRef dict(PyDict_New());
  if (!dict) return nullptr;
  for (const auto& [key, value] : values) {
    if (!SetText(dict.get(), key_text(key), write(value))) return nullptr;
  }
  return dict.release();
}

inline absl::string_view Itself(const std::string& key) { return key; }

}  // namespace report_objects_internal

template <typename T>
struct PythonCodec<std::vector<T>> {
  static PyObject* Write(const std::vector<T>& values) {
    return report_objects_internal::ListOf(values, &ToPython<T>);
  }
};

template <typename T>
struct PythonCodec<std::optional<T>> {
  static PyObject* Write(const std::optional<T>& value) {
    return value ? ToPython<T>(*value) : Py_NewRef(Py_None);
  }
};

template <typename T>
struct PythonCodec<std::map<std::string, T>> {
  static PyObject* Write(const std::map<std::string, T>& values) {
    return report_objects_internal::DictOf(
        values, &report_objects_internal::Itself, &ToPython<T>);
  }
};

template <typename T>
struct PythonCodec<std::map<std::int64_t, T>> {
  static PyObject* Write(const std::map<std::int64_t, T>& values) {
    return report_objects_internal::DictOf(
        values, [](std::int64_t key) { return std::to_string(key); },
        &ToPython<T>);
  }
};

template <typename T>
struct PythonCodec<std::vector<std::pair<std::string, T>>> {
  static PyObject* Write(const std::vector<std::pair<std::string, T>>& values) {
    return report_objects_internal::DictOf(
        values, &report_objects_internal::Itself, &ToPython<T>);
  }
};

// --- Codecs for rows (FieldAs).

template <>
struct PythonRowCodec<report::IndexCodec> {
  static PyObject* Write(std::int64_t value) {
    return PyLong_FromLongLong(value);
  }
};

template <>
struct PythonRowCodec<report::NonNegativeCountCodec> {
  static PyObject* Write(report::Count value) { return PythonCount(value); }
};

template <int kVersion>
struct PythonRowCodec<report::SchemaVersionCodec<kVersion>> {
  static PyObject* Write(int value) { return PyLong_FromLong(value); }
};

template <typename Codec>
struct PythonRowCodec<report::ArrayOf<Codec>> {
  template <typename V>
  static PyObject* Write(const std::vector<V>& values) {
    return report_objects_internal::ListOf(values, [](const V& value) {
      return PythonRowCodec<Codec>::Write(value);
    });
  }
};

template <typename Codec>
struct PythonRowCodec<report::MapOf<Codec>> {
  template <typename V>
  static PyObject* Write(const std::map<std::string, V>& values) {
    return report_objects_internal::DictOf(
        values, &report_objects_internal::Itself,
        [](const V& value) { return PythonRowCodec<Codec>::Write(value); });
  }
};

// --- Records.

namespace report_objects_internal {

// The writer of a row's member: PythonRowCodec<C>, or PythonCodec<V> by
// default (report::field_table_internal::CodecOf's rule).
template <typename C, typename V>
PyObject* WriteAs(const V& value) {
  if constexpr (std::is_same_v<C, report::DefaultCodec>) {
    return PythonCodec<V>::Write(value);
  } else {
    return PythonRowCodec<C>::Write(value);
  }
}

// The rows of `record`'s table, each into `dict`; false with an error set.
// Each overload is report::field_table_internal::WriteField's, writing
// Python objects; whether a row belongs to the record and whether an
// optional member is unset are asked of the same functions.
template <typename T>
bool WriteRows(const T& record, PyObject* dict);

template <typename T, typename M, typename C>
bool WriteRow(const report::Field<T, M, C>& field, const T& record,
              PyObject* dict) {
  namespace internal = report::field_table_internal;
  if (!internal::Belongs(field, record)) return true;
  const M& value = record.*field.member;
  if (field.presence == report::kOptional && internal::IsUnset(value)) {
    return true;
  }
  PyObject* key = KeyOf(field.name);
  if (key == nullptr) return false;
  if constexpr (internal::IsOptional<M>::value) {
    using V = typename M::value_type;
    return SetItem(dict, key,
                   value ? WriteAs<C, V>(*value) : Py_NewRef(Py_None));
  } else {
    return SetItem(dict, key, WriteAs<C, M>(value));
  }
}

template <typename T, typename E, typename M>
bool WriteRow(const report::KeyedField<T, E, M>& field, const T& record,
              PyObject* dict) {
  return SetText(dict, report::field_table_internal::TagKey(record.*field.tag),
                 ToPython(record.*field.member));
}

template <typename T, typename... Rows>
bool WriteRow(const report::GroupField<T, Rows...>& field, const T& record,
              PyObject* dict) {
  OwnedRef group(PyDict_New());
  if (!group) return false;
  const bool written = std::apply(
      [&](const auto&... row) {
        return (WriteRow(row, record, group.get()) && ...);
      },
      field.rows);
  PyObject* key = written ? KeyOf(field.name) : nullptr;
  return key != nullptr && SetItem(dict, key, group.release());
}

// A derived key's value is a function's Json: converted.
template <typename T>
bool WriteRow(const report::DerivedField<T>& field, const T& record,
              PyObject* dict) {
  PyObject* key = KeyOf(field.name);
  return key != nullptr && SetItem(dict, key, FromJson(field.derive(record)));
}

template <typename T, typename M>
bool WriteRow(const report::InlineField<T, M>& field, const T& record,
              PyObject* dict) {
  return WriteRows(record.*field.member, dict);
}

template <typename T>
bool WriteRows(const T& record, PyObject* dict) {
  return std::apply(
      [&](const auto&... field) {
        return (WriteRow(field, record, dict) && ...);
      },
      T::kFields);
}

// NOTE [Dicts of a fixed shape copied]
// A report holds hundreds of dicts of the same few records (a 69-module
// crawl's has 77 layers and about 450 metrics). Made key by key, each dict
// is allocated empty, grows past its first table at the sixth key, and
// hashes its way into both tables. Where every row of a table writes its
// key into every record (no condition, no optional member, no tag-named
// key, no kept unknown keys) the keys and their order are the table's,
// whatever the record: those records start as a copy of one dict of that
// shape, kept for the process with None for every value, and their rows
// replace the values in place (CPython copies such a dict's table in one
// piece). A metric's dict went from about 3,800 to 3,400 instructions this
// way (and to 1,800 by NOTE [Metric dicts copied by kind]).

template <typename T, typename M, typename C>
constexpr bool AlwaysWritten(const report::Field<T, M, C>& field) {
  return !field.conditional && field.presence == report::kRequired;
}

template <typename T, typename E, typename M>
constexpr bool AlwaysWritten(const report::KeyedField<T, E, M>&) {
  return false;
}

template <typename T, typename... Rows>
constexpr bool AlwaysWritten(const report::GroupField<T, Rows...>&) {
  return true;
}

template <typename T>
constexpr bool AlwaysWritten(const report::DerivedField<T>&) {
  return true;
}

template <typename T>
constexpr bool WritesEveryKey();

template <typename T, typename M>
constexpr bool AlwaysWritten(const report::InlineField<T, M>&) {
  return WritesEveryKey<M>();
}

// Whether every record of T writes the same keys, in the same order.
template <typename T>
constexpr bool WritesEveryKey() {
  if constexpr (report::KeepsUnknownKeys<T>) {
    return false;
  } else {
    return std::apply(
        [](const auto&... row) { return (AlwaysWritten(row) && ...); },
        T::kFields);
  }
}

// The record a FieldsOf row writes inline; void for every other row.
template <typename Row>
struct InlinedRecord {
  using type = void;
};

template <typename T, typename M>
struct InlinedRecord<report::InlineField<T, M>> {
  using type = M;
};

// Sets dict[key] = None for each key T's rows write, in their order.
template <typename T>
bool AddKeys(PyObject* dict) {
  return std::apply(
      [&](const auto&... row) {
        return ([&](const auto& one) {
          using Inlined = InlinedRecord<std::decay_t<decltype(one)>>::type;
          if constexpr (!std::is_void_v<Inlined>) {
            return AddKeys<Inlined>(dict);
          } else {
            PyObject* key = KeyOf(one.name);
            return key != nullptr && PyDict_SetItem(dict, key, Py_None) == 0;
          }
        }(row) &&
                ...);
      },
      T::kFields);
}

// The dict T's records are copied from (NOTE): a borrowed reference, made
// at the first use and kept, or nullptr with an error set. Under the GIL.
template <typename T>
PyObject* ShapeOf() {
  static PyObject* shape = nullptr;
  if (shape == nullptr) {
    OwnedRef made(PyDict_New());
    if (!made || !AddKeys<T>(made.get())) return nullptr;
    shape = made.release();
  }
  return shape;
}

// An empty dict for a record of T, or a copy of its shape (NOTE).
template <typename T>
PyObject* NewRecordDict() {
  if constexpr (WritesEveryKey<T>()) {
    PyObject* shape = ShapeOf<T>();
    return shape == nullptr ? nullptr : PyDict_Copy(shape);
  } else {
    return PyDict_New();
  }
}

}  // namespace report_objects_internal

template <report::HasFieldTable T>
struct PythonCodec<T> {
  static PyObject* Write(const T& record) {
    OwnedRef dict(report_objects_internal::NewRecordDict<T>());
    if (!dict || !report_objects_internal::WriteRows(record, dict.get())) {
      return nullptr;
    }
    if constexpr (report::KeepsUnknownKeys<T>) {
      // After the table's keys, those it has not written (JsonCodec<T>).
      const report::Json& others = record.*T::kUnknownKeys;
      if (others.is_object()) {
        for (const auto& [key, value] : others.items()) {
          OwnedRef name(PythonText(key));
          if (!name) return nullptr;
          const int present = PyDict_Contains(dict.get(), name.get());
          if (present < 0) return nullptr;
          if (present == 0 && !report_objects_internal::SetItem(
                                  dict.get(), name.get(), FromJson(value))) {
            return nullptr;
          }
        }
      }
    }
    return dict.release();
  }
};

// NOTE [Metric dicts copied by kind]
// A report's metrics repeat a few (status, unit, scope, method) kinds
// hundreds of times, and differ in value and known_value only. So the dict
// of the last metric of each kind is kept (a copy: the report's dicts are
// the caller's to change), and the next metric of that kind starts as its
// copy with its own value and known_value rows written over it: about
// 1,800 instructions a metric instead of 3,400 (a 69-module crawl's report
// has about 450, of 13 kinds). The kinds are kept in a small direct-mapped
// table, made and used under the GIL (report_objects.cc).
template <>
struct PythonCodec<report::MetricResult> {
  static PyObject* Write(const report::MetricResult& metric);
};

// --- The report types whose JSON writers are their own (report/).

template <>
struct PythonCodec<report::MetricValue> {
  // JsonCodec<MetricValue>: a float as is, not as JsonCodec<double>.
  static PyObject* Write(const report::MetricValue& value) {
    if (const auto* count = std::get_if<report::Count>(&value)) {
      return PythonCount(*count);
    }
    if (const auto* real = std::get_if<double>(&value)) {
      return PyFloat_FromDouble(*real);
    }
    return PythonText(std::get<std::string>(value));
  }
};

template <>
struct PythonCodec<report::MetricMap> {
  static PyObject* Write(const report::MetricMap& metrics) {
    return report_objects_internal::DictOf(metrics.entries(),
                                           &report_objects_internal::Itself,
                                           &ToPython<report::MetricResult>);
  }
};

template <>
struct PythonCodec<report::ValueKind> {
  static PyObject* Write(report::ValueKind kind) {
    return PythonText(report::ValueKindName(kind));
  }
};

template <>
struct PythonCodec<report::MappingKey> {
  static PyObject* Write(const report::MappingKey& key) {
    if (const auto* integer = std::get_if<report::Count>(&key)) {
      return PythonCount(*integer);
    }
    if (const auto* flag = std::get_if<bool>(&key)) {
      return PyBool_FromLong(*flag);
    }
    return PythonText(std::get<std::string>(key));
  }
};

template <>
struct PythonRowCodec<report::MetricStringCodec> {
  static PyObject* Write(const std::string& text) { return PythonText(text); }
};

template <>
struct PythonRowCodec<report::MetricStatusCodec> {
  static PyObject* Write(report::MetricStatus status) {
    return PythonText(report::MetricStatusName(status));
  }
};

template <>
struct PythonRowCodec<report::DiffStatusCodec> {
  static PyObject* Write(report::MetricStatus status) {
    return PythonText(report::MetricStatusName(status));
  }
};

template <>
struct PythonRowCodec<report::DeltaCodec> {
  static PyObject* Write(const report::MetricValue& delta) {
    return ToPython(delta);
  }
};

template <>
struct PythonRowCodec<report::MetricDiffsCodec> {
  static PyObject* Write(
      const std::map<std::string, report::MetricDiff>& diffs) {
    return ToPython(diffs);
  }
};

template <>
struct PythonRowCodec<report::PrecisionCountsCodec> {
  static PyObject* Write(const std::map<std::string, report::Count>& counts) {
    return PythonRowCodec<report::MapOf<report::NonNegativeCountCodec>>::Write(
        counts);
  }
};

template <>
struct PythonRowCodec<report::InputsMetadata::SourceCodec> {
  static PyObject* Write(const std::string& source) {
    return PythonText(source);
  }
};

template <>
struct PythonRowCodec<report::AnalysisReport::SchemaVersionCodec> {
  static PyObject* Write(std::int64_t version) {
    return PyLong_FromLongLong(version);
  }
};

// An AnalysisReport's operator_flops: FlopReportToJson is ToJson.
template <>
struct PythonRowCodec<report::JsonFunctions<report::FlopReportToJson,
                                            report::FlopReportFromJson>> {
  static PyObject* Write(const report::FlopReport& flops) {
    return ToPython(flops);
  }
};

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_REPORT_OBJECTS_H_
