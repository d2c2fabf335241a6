// Records with field tables (report/field_table.h) read straight from
// Python objects: FromPython<T>(value, "report") is the record, or the error,
// that report::FromJson<T>(JsonValue(json, "report")) gives for the JSON
// that ToJson(value) (python_objects.h) builds, with no JSON value built in
// between. The reverse of report_objects.h.
//
//   if (!CheckJsonData(value, "report", "report is not a JSON report: "))
//     return nullptr;  // the ValueError ToJson would raise
//   absl::StatusOr<report::AnalysisReport> report =
//       FromPython<report::AnalysisReport>(value, "report");
//
// The rules are the JSON reader's, row for row: unknown keys refused with
// their path (in document order, before the rows are read), required and
// optional fields, nullable optionals, When, FieldKeyedBy, FieldsOf,
// FieldGroup, Derived and Recomputed rows, kUnknownKeys,
// kAcceptsUnknownKeys, kMaxNesting and each record's Validate; so are the
// error texts, word for word ("report.layers[3].metrics.macs.status: status
// must be ..."). Python's types stand for JSON's as ToJson maps them: a dict
// is an object (str keys, in insertion order), a list or a tuple an array,
// None null, and an int of any size up to 128 bits an integer.
//
// `value` must be JSON data (CheckJsonData accepts it): the reader does not
// check again what ToJson refuses (a non-finite float, an int outside 128
// bits, a lone surrogate, a key that is not a str, nesting beyond
// kMaxJsonDepth, a value of another type), which ToJson refuses wherever
// the value stands, read or not, and with a message of its own.
//
// NOTE [Reading Python objects through the field tables]
// The extension module used to convert a report argument to report::Json
// (one allocation per node and per key) and read the record from that: the
// JSON tree was built only to be read once. Reading the rows from the dicts
// makes each value once. Each path is a chain of the keys and indexes on
// the stack, spelled out only for an error. Where a value is not what the
// fast path expects (a scalar of another type, an int beyond 64 bits) and
// for the codecs with a Read of their own (a tagged union, a derived key's
// check), the reader converts that one subtree to JSON and asks the JSON
// codec: the JSON reader's rules and words by construction, at the cost of
// that subtree's conversion, which the reports' hot rows (layers, metrics,
// value descriptions, FLOP maps) never pay. A record's Validate that reads
// the object (Validate(const JsonObject&)) gets a JSON object of the dict's
// keys, each null: what such a check asks of it (which keys are present,
// their paths). Everything here needs the GIL.

#ifndef TORCHSCAN_PYTHON_OPERATORS_REPORT_FROM_OBJECTS_H_
#define TORCHSCAN_PYTHON_OPERATORS_REPORT_FROM_OBJECTS_H_

// Python.h before any standard header (python_objects.h) ...
#include "python/operators/python_objects.h"
// ... then the others.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "python/operators/report_objects.h"
#include "report/analysis_report.h"
#include "report/count.h"
#include "report/field_table.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "report/json_reader.h"
#include "report/metric_map.h"
#include "report/metric_result.h"
#include "report/value_metadata.h"

namespace torchscan::dispatch {

// One Python value of a document and its path: the root, or a member or an
// item of a value that outlives it (its parent, on the caller's stack).
class PythonValue {
 public:
  // The document's root, named `name` (which must outlive the value).
  PythonValue(PyObject* object, absl::string_view name)
      : object_(object), parent_(nullptr), key_(name) {}
  // Member `key` of `parent` (`key` must outlive the value).
  PythonValue(PyObject* object, const PythonValue& parent,
              absl::string_view key)
      : object_(object), parent_(&parent), key_(key), member_(true) {}
  // Item `index` of `parent`.
  PythonValue(PyObject* object, const PythonValue& parent, std::size_t index)
      : object_(object), parent_(&parent), index_(index) {}

  PyObject* object() const { return object_; }
  // The path as the JSON reader spells it ("report.layers[3].path").
  std::string path() const;

  bool is_null() const { return object_ == Py_None; }
  bool is_bool() const { return Py_TYPE(object_) == &PyBool_Type; }
  bool is_int() const { return !is_bool() && PyLong_Check(object_); }
  bool is_float() const { return PyFloat_Check(object_); }
  bool is_str() const { return PyUnicode_Check(object_); }
  bool is_dict() const { return PyDict_Check(object_); }
  bool is_array() const {
    return PyList_Check(object_) || PyTuple_Check(object_);
  }

  // report::JsonKind's word for the value ("object", "integer", ...).
  absl::string_view Kind() const;
  // report::FieldError(path(), problem).
  absl::Status Error(absl::string_view problem) const;
  // Error("expected <what>, got <kind>").
  absl::Status Expected(absl::string_view what) const;

  // The UTF-8 text of a str (CPython keeps it with the str).
  absl::string_view Text() const;
  // An array's size and its item `index` (borrowed).
  Py_ssize_t size() const;
  PyObject* Item(Py_ssize_t index) const;

  // `read` (a function of a report::JsonValue) applied to the value
  // converted to JSON, at the value's path: the JSON reader's rules and
  // words, for what the fast paths below do not take.
  template <typename Read>
  auto ViaJson(Read read) const
      -> std::invoke_result_t<Read, const report::JsonValue&> {
    report::Json json;
    if (absl::Status status = ToJsonStatus(&json); !status.ok()) {
      return status;
    }
    return std::invoke(read, report::JsonValue(json, path()));
  }
  // The value converted to JSON.
  absl::Status ToJsonStatus(report::Json* out) const;

  // report::JsonValue's reads, with its rules and words.
  absl::StatusOr<std::string> String() const;
  absl::StatusOr<bool> Bool() const;
  absl::StatusOr<report::Count> Integer() const;
  absl::StatusOr<report::Count> NonNegativeCount() const;
  absl::StatusOr<std::int64_t> Index() const;
  absl::StatusOr<std::int64_t> Int64() const;
  absl::StatusOr<double> Number() const;

  // The value of an int (is_int) that fits in 64 bits, or nullopt.
  std::optional<std::int64_t> SmallInt() const;

 private:
  PyObject* object_;
  const PythonValue* parent_;
  absl::string_view key_;
  std::size_t index_ = 0;
  bool member_ = false;
};

// How values of type T are read from Python objects (see the file comment).
// The primary template reads the value's JSON with report::JsonCodec<T>;
// the specializations below read the types report::JsonCodec knows without
// it.
template <typename T>
struct PythonReader {
  static absl::StatusOr<T> Read(const PythonValue& node) {
    return node.ViaJson([](const report::JsonValue& json) {
      return report::JsonCodec<T>::Read(json);
    });
  }
};

// How the FieldAs codec `Codec` reads a member from Python objects. The
// primary template reads the value's JSON with Codec::Read.
template <typename Codec>
struct PythonRowReader {
  static auto Read(const PythonValue& node) {
    return node.ViaJson(
        [](const report::JsonValue& json) { return Codec::Read(json); });
  }
};

// `value` (JSON data, CheckJsonData) read as T, the root named `name`.
template <typename T>
absl::StatusOr<T> FromPython(PyObject* value, absl::string_view name) {
  return PythonReader<T>::Read(PythonValue(value, name));
}

// --- Scalars: the fast path for the expected type, else the JSON codec.

template <>
struct PythonReader<bool> {
  static absl::StatusOr<bool> Read(const PythonValue& node) {
    return node.Bool();
  }
};

template <>
struct PythonReader<std::string> {
  static absl::StatusOr<std::string> Read(const PythonValue& node) {
    return node.String();
  }
};

template <>
struct PythonReader<std::int64_t> {
  static absl::StatusOr<std::int64_t> Read(const PythonValue& node) {
    return node.Int64();
  }
};

template <>
struct PythonReader<report::Count> {
  static absl::StatusOr<report::Count> Read(const PythonValue& node) {
    return node.Integer();
  }
};

template <>
struct PythonReader<double> {
  static absl::StatusOr<double> Read(const PythonValue& node) {
    // An int beyond 64 bits is no JSON number (JsonCodec<double>'s rule).
    if (node.is_float() || (node.is_int() && node.SmallInt())) {
      return node.Number();
    }
    return node.ViaJson(&report::JsonCodec<double>::Read);
  }
};

template <>
struct PythonReader<report::JsonNull> {
  static absl::StatusOr<report::JsonNull> Read(const PythonValue& node) {
    if (node.is_null()) return report::JsonNull{};
    return node.ViaJson(&report::JsonCodec<report::JsonNull>::Read);
  }
};

template <report::NamedEnum E>
struct PythonReader<E> {
  static absl::StatusOr<E> Read(const PythonValue& node) {
    if (node.is_str()) {
      const absl::string_view text = node.Text();
      for (const auto& [value, name] : EnumNames(E{})) {
        if (text == name) return value;
      }
    }
    return node.ViaJson(&report::JsonCodec<E>::Read);
  }
};

// --- Containers.

namespace report_from_objects_internal {

// The error of the Python exception set (a conversion that failed).
absl::Status TakePythonError();

// The UTF-8 text of a str that CheckJsonData accepted.
absl::string_view TextOf(PyObject* text);

// The text of `key`, a key of the dict `object`: "<path>: a dict key of
// type int, not str" for a key that is no str (CheckJsonData's words: JSON
// objects have text keys), "<path>: a dict key that is not UTF-8" for one
// that holds a lone surrogate.
absl::StatusOr<absl::string_view> KeyText(const PythonValue& object,
                                          PyObject* key);

// The items of an array, each read by `read` into `out`.
template <typename V, typename Read>
absl::Status ReadItems(const PythonValue& node, Read read,
                       std::vector<V>& out) {
  const Py_ssize_t size = node.size();
  out.reserve(static_cast<std::size_t>(size));
  for (Py_ssize_t i = 0; i < size; ++i) {
    const PythonValue item(node.Item(i), node, static_cast<std::size_t>(i));
    TS_ASSIGN_OR_RETURN(V value, read(item));
    out.push_back(std::move(value));
  }
  return absl::OkStatus();
}

// Calls `visit(key, member)` for the members of a dict, in insertion order,
// stopping at the first error.
template <typename Visit>
absl::Status ForEachMember(const PythonValue& node, Visit visit) {
  PyObject *key, *item;
  Py_ssize_t position = 0;
  while (PyDict_Next(node.object(), &position, &key, &item)) {
    TS_ASSIGN_OR_RETURN(const absl::string_view name, KeyText(node, key));
    TS_RETURN_IF_ERROR(visit(name, PythonValue(item, node, name)));
  }
  return absl::OkStatus();
}

}  // namespace report_from_objects_internal

template <typename T>
struct PythonReader<std::vector<T>> {
  static absl::StatusOr<std::vector<T>> Read(const PythonValue& node) {
    if (!node.is_array()) return node.Expected("an array");
    std::vector<T> values;
    TS_RETURN_IF_ERROR(report_from_objects_internal::ReadItems(
        node, &PythonReader<T>::Read, values));
    return values;
  }
};

template <typename T>
struct PythonReader<std::optional<T>> {
  static absl::StatusOr<std::optional<T>> Read(const PythonValue& node) {
    if (node.is_null()) return std::optional<T>();
    TS_ASSIGN_OR_RETURN(T value, PythonReader<T>::Read(node));
    return std::optional<T>(std::move(value));
  }
};

template <typename T>
struct PythonReader<std::map<std::string, T>> {
  static absl::StatusOr<std::map<std::string, T>> Read(
      const PythonValue& node) {
    if (!node.is_dict()) return node.Expected("an object");
    std::map<std::string, T> values;
    TS_RETURN_IF_ERROR(report_from_objects_internal::ForEachMember(
        node,
        [&](absl::string_view key, const PythonValue& member) -> absl::Status {
          TS_ASSIGN_OR_RETURN(T value, PythonReader<T>::Read(member));
          values.emplace(key, std::move(value));
          return absl::OkStatus();
        }));
    return values;
  }
};

template <typename T>
struct PythonReader<std::map<std::int64_t, T>> {
  static absl::StatusOr<std::map<std::int64_t, T>> Read(
      const PythonValue& node) {
    if (!node.is_dict()) return node.Expected("an object");
    std::map<std::int64_t, T> values;
    TS_RETURN_IF_ERROR(report_from_objects_internal::ForEachMember(
        node,
        [&](absl::string_view key, const PythonValue& member) -> absl::Status {
          // JsonCodec<std::map<std::int64_t, T>>'s rule.
          std::int64_t number = 0;
          if (!absl::SimpleAtoi(key, &number) || absl::StrCat(number) != key) {
            return member.Error("is not an integer key");
          }
          TS_ASSIGN_OR_RETURN(T value, PythonReader<T>::Read(member));
          values.emplace(number, std::move(value));
          return absl::OkStatus();
        }));
    return values;
  }
};

template <typename T>
struct PythonReader<std::vector<std::pair<std::string, T>>> {
  static absl::StatusOr<std::vector<std::pair<std::string, T>>> Read(
      const PythonValue& node) {
    if (!node.is_dict()) return node.Expected("an object");
    std::vector<std::pair<std::string, T>> values;
    TS_RETURN_IF_ERROR(report_from_objects_internal::ForEachMember(
        node,
        [&](absl::string_view key, const PythonValue& member) -> absl::Status {
          TS_ASSIGN_OR_RETURN(T value, PythonReader<T>::Read(member));
          values.emplace_back(std::string(key), std::move(value));
          return absl::OkStatus();
        }));
    return values;
  }
};

// --- Codecs for rows (FieldAs).

template <>
struct PythonRowReader<report::IndexCodec> {
  static absl::StatusOr<std::int64_t> Read(const PythonValue& node) {
    return node.Index();
  }
};

template <>
struct PythonRowReader<report::NonNegativeCountCodec> {
  static absl::StatusOr<report::Count> Read(const PythonValue& node) {
    return node.NonNegativeCount();
  }
};

template <typename Codec>
struct PythonRowReader<report::ArrayOf<Codec>> {
  static auto Read(const PythonValue& node) -> absl::StatusOr<std::vector<
      typename decltype(PythonRowReader<Codec>::Read(node))::value_type>> {
    using V = typename decltype(PythonRowReader<Codec>::Read(node))::value_type;
    if (!node.is_array()) return node.Expected("an array");
    std::vector<V> values;
    TS_RETURN_IF_ERROR(report_from_objects_internal::ReadItems(
        node, &PythonRowReader<Codec>::Read, values));
    return values;
  }
};

template <typename Codec>
struct PythonRowReader<report::MapOf<Codec>> {
  static auto Read(const PythonValue& node) -> absl::StatusOr<
      std::map<std::string, typename decltype(PythonRowReader<Codec>::Read(
                                node))::value_type>> {
    using V = typename decltype(PythonRowReader<Codec>::Read(node))::value_type;
    if (!node.is_dict()) return node.Expected("an object");
    std::map<std::string, V> values;
    TS_RETURN_IF_ERROR(report_from_objects_internal::ForEachMember(
        node,
        [&](absl::string_view key, const PythonValue& member) -> absl::Status {
          TS_ASSIGN_OR_RETURN(V value, PythonRowReader<Codec>::Read(member));
          values.emplace(key, std::move(value));
          return absl::OkStatus();
        }));
    return values;
  }
};

// --- Records.

namespace report_from_objects_internal {

namespace internal = report::field_table_internal;

// A record before its rows are read: T{}, as JsonCodec<T>::Read starts.
template <typename T>
T EmptyRecord() {
  return T{};
}
// MetricResult's default constructor is JsonCodec<MetricResult>'s alone:
// the unavailable metric of no kind it makes.
template <>
inline report::MetricResult EmptyRecord<report::MetricResult>() {
  return report::MetricResult::Unavailable(report::MetricKind{});
}

// The member `key` of a dict (borrowed), or nullptr when absent.
PyObject* MemberOf(const PythonValue& object, const char* key);
PyObject* MemberOf(const PythonValue& object, absl::string_view key);

// JsonObject::RejectUnknownKeys: the first key not in `known`.
absl::Status RejectUnknownKeys(const PythonValue& object,
                               absl::Span<const absl::string_view> known);

// The dict's keys as a JSON object of nulls, at the dict's path: what a
// Validate(const JsonObject&) and NeedsExactlyOneOf ask of an object.
report::Json KeysOf(const PythonValue& object);

// A row's member read by C, or PythonReader<V> by default.
template <typename C, typename V>
absl::StatusOr<V> ReadAs(const PythonValue& node) {
  if constexpr (std::is_same_v<C, report::DefaultCodec>) {
    return PythonReader<V>::Read(node);
  } else {
    return PythonRowReader<C>::Read(node);
  }
}

// Each overload is report::field_table_internal::ReadField's, reading a
// dict; whether a row belongs to the record is asked of the same function.
template <typename T>
absl::Status ReadRows(const PythonValue& object, T& record);
template <typename T>
absl::Status Validated(T& record, const PythonValue& object);

template <typename T, typename M, typename C>
absl::Status ReadRow(const report::Field<T, M, C>& field,
                     const PythonValue& object, T& record) {
  PyObject* found = MemberOf(object, field.name);
  if (!internal::Belongs(field, record)) return absl::OkStatus();
  if (found == nullptr) {
    if (PyErr_Occurred()) return TakePythonError();
    if (field.presence == report::kRequired) {
      return report::FieldError(report::MemberPath(object.path(), field.name),
                                "is missing");
    }
    return absl::OkStatus();
  }
  const PythonValue member(found, object, field.name);
  if constexpr (internal::IsOptional<M>::value) {
    using V = typename M::value_type;
    if (field.presence == report::kRequired && member.is_null()) {
      record.*field.member = std::nullopt;
    } else {
      TS_ASSIGN_OR_RETURN(record.*field.member, (ReadAs<C, V>(member)));
    }
  } else {
    TS_ASSIGN_OR_RETURN(record.*field.member, (ReadAs<C, M>(member)));
  }
  return absl::OkStatus();
}

template <typename T, typename E, typename M>
absl::Status ReadRow(const report::KeyedField<T, E, M>& field,
                     const PythonValue& object, T& record) {
  PyObject* found = nullptr;
  absl::string_view found_key;
  int present = 0;
  for (const auto& [tag, key] : EnumNames(E{})) {
    if (PyObject* value = MemberOf(object, key)) {
      ++present;
      record.*field.tag = tag;
      found = value;
      found_key = key;
    } else if (PyErr_Occurred()) {
      return TakePythonError();
    }
  }
  if (present != 1) {
    std::vector<absl::string_view> keys;
    internal::AddNames(field, keys);
    const report::Json keys_json = KeysOf(object);
    return report::NeedsExactlyOneOf(
        report::JsonObject(report::JsonValue(keys_json, object.path())), keys);
  }
  TS_ASSIGN_OR_RETURN(record.*field.member, PythonReader<M>::Read(PythonValue(
                                                found, object, found_key)));
  return absl::OkStatus();
}

template <typename T, typename... Rows>
absl::Status ReadRow(const report::GroupField<T, Rows...>& field,
                     const PythonValue& object, T& record) {
  PyObject* found = MemberOf(object, field.name);
  if (found == nullptr) {
    if (PyErr_Occurred()) return TakePythonError();
    return report::FieldError(report::MemberPath(object.path(), field.name),
                              "is missing");
  }
  const PythonValue group(found, object, field.name);
  if (!group.is_dict()) return group.Expected("an object");
  std::vector<absl::string_view> names;
  std::apply([&](const auto&... row) { (internal::AddNames(row, names), ...); },
             field.rows);
  TS_RETURN_IF_ERROR(RejectUnknownKeys(group, names));
  absl::Status status;
  std::apply(
      [&](const auto&... row) {
        static_cast<void>(
            ((status = ReadRow(row, group, record), status.ok()) && ...));
      },
      field.rows);
  return status;
}

// Nothing to read: the key is checked once the record is read (CheckRows).
template <typename T>
absl::Status ReadRow(const report::DerivedField<T>&, const PythonValue&, T&) {
  return absl::OkStatus();
}

template <typename T, typename M>
absl::Status ReadRow(const report::InlineField<T, M>& field,
                     const PythonValue& object, T& record) {
  M& member = record.*field.member;
  TS_RETURN_IF_ERROR(ReadRows(object, member));
  return Validated(member, object);
}

template <typename T>
absl::Status ReadRows(const PythonValue& object, T& record) {
  absl::Status status;
  std::apply(
      [&](const auto&... field) {
        static_cast<void>(
            ((status = ReadRow(field, object, record), status.ok()) && ...));
      },
      T::kFields);
  return status;
}

// internal::Validated, with the dict's keys for a Validate that reads the
// object.
template <typename T>
absl::Status Validated(T& record, const PythonValue& object) {
  if constexpr (requires(const report::JsonObject& keys) {
                  record.Validate(keys);
                }) {
    const report::Json keys = KeysOf(object);
    return record.Validate(
        report::JsonObject(report::JsonValue(keys, object.path())));
  } else if constexpr (requires { record.Validate(object.path()); }) {
    // NOTE [Paths spelled for errors only]
    // A Validate(path) uses its path only in its errors and changes the
    // record only when it succeeds (MetricResult's completes it): it runs
    // without the path first, and again with it only when it fails, so
    // that the path of every record read is not spelled out.
    if (absl::Status status = record.Validate(absl::string_view());
        status.ok()) {
      return status;
    }
    return record.Validate(object.path());
  } else {
    return absl::OkStatus();
  }
}

// Whether a row is checked after reading (Derived, Recomputed).
template <typename T, typename M, typename C>
constexpr bool IsChecked(const report::Field<T, M, C>& field) {
  return field.recomputed;
}
template <typename T, typename E, typename M>
constexpr bool IsChecked(const report::KeyedField<T, E, M>&) {
  return false;
}
template <typename T, typename... Rows>
constexpr bool IsChecked(const report::GroupField<T, Rows...>&) {
  return false;
}
template <typename T>
constexpr bool IsChecked(const report::DerivedField<T>&) {
  return true;
}
template <typename T, typename M>
constexpr bool IsChecked(const report::InlineField<T, M>&) {
  return std::apply([](const auto&... row) { return (IsChecked(row) || ...); },
                    M::kFields);
}

template <typename T>
constexpr bool kHasCheckedRows = std::apply(
    [](const auto&... field) { return (IsChecked(field) || ...); }, T::kFields);

// Whether a row has a condition (When), as internal::IsConditional.
template <typename T>
constexpr bool kHasConditionalRows = std::apply(
    [](const auto&... field) {
      return (internal::IsConditional(field) || ...);
    },
    T::kFields);

}  // namespace report_from_objects_internal

template <report::HasFieldTable T>
struct PythonReader<T> {
  static absl::StatusOr<T> Read(const PythonValue& node) {
    namespace reader = report_from_objects_internal;
    // NOTE [Nesting of recursive records] in field_table.h: the same guard,
    // so the same depth is refused.
    [[maybe_unused]] report::field_table_internal::NestingGuard<T> guard;
    if constexpr (requires { T::kMaxNesting; }) {
      if (guard.Outer() > T::kMaxNesting) {
        return node.Error(
            absl::StrCat("nesting deeper than ", T::kMaxNesting, " levels"));
      }
    }
    static const std::vector<absl::string_view> kNames =
        report::FieldNames<T>();
    if (!node.is_dict()) return node.Expected("an object");
    if constexpr (!report::KeepsUnknownKeys<T> &&
                  !report::AcceptsUnknownKeys<T>) {
      TS_RETURN_IF_ERROR(reader::RejectUnknownKeys(node, kNames));
    }
    T record = reader::EmptyRecord<T>();
    TS_RETURN_IF_ERROR(reader::ReadRows(node, record));
    if constexpr (reader::kHasConditionalRows<T> ||
                  report::KeepsUnknownKeys<T>) {
      TS_RETURN_IF_ERROR(reader::ForEachMember(
          node,
          [&](absl::string_view key,
              const PythonValue& member) -> absl::Status {
            if (std::find(kNames.begin(), kNames.end(), key) == kNames.end()) {
              if constexpr (report::KeepsUnknownKeys<T>) {
                report::Json value;
                TS_RETURN_IF_ERROR(member.ToJsonStatus(&value));
                (record.*T::kUnknownKeys)[std::string(key)] = std::move(value);
              }
            } else if (!report::field_table_internal::AnyRowBelongs(record,
                                                                    key)) {
              return member.Error("unknown field");
            }
            return absl::OkStatus();
          }));
    }
    TS_RETURN_IF_ERROR(reader::Validated(record, node));
    if constexpr (reader::kHasCheckedRows<T>) {
      // Derived and recomputed rows compare JSON: the record's object is
      // converted (communication and job records, small).
      report::Json json;
      TS_RETURN_IF_ERROR(node.ToJsonStatus(&json));
      TS_RETURN_IF_ERROR(report::field_table_internal::CheckRows(
          report::JsonObject(report::JsonValue(json, node.path())), record));
    }
    return record;
  }
};

// --- The report types whose JSON readers are their own (report/).

template <>
struct PythonReader<report::MetricValue> {
  static absl::StatusOr<report::MetricValue> Read(const PythonValue& node);
};

template <>
struct PythonReader<report::MetricMap> {
  static absl::StatusOr<report::MetricMap> Read(const PythonValue& node);
};

template <>
struct PythonReader<report::ValueKind> {
  static absl::StatusOr<report::ValueKind> Read(const PythonValue& node);
};

template <>
struct PythonReader<report::MappingKey> {
  static absl::StatusOr<report::MappingKey> Read(const PythonValue& node);
};

template <>
struct PythonRowReader<report::MetricStringCodec> {
  static absl::StatusOr<std::string> Read(const PythonValue& node);
};

template <>
struct PythonRowReader<report::MetricStatusCodec> {
  static absl::StatusOr<report::MetricStatus> Read(const PythonValue& node);
};

// An AnalysisReport's operator_flops: FlopReportFromJson is FromJson.
template <>
struct PythonRowReader<report::JsonFunctions<report::FlopReportToJson,
                                             report::FlopReportFromJson>> {
  static absl::StatusOr<report::FlopReport> Read(const PythonValue& node) {
    return PythonReader<report::FlopReport>::Read(node);
  }
};

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_PYTHON_OPERATORS_REPORT_FROM_OBJECTS_H_
