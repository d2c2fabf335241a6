// _report_objects_check: a test-only CPython extension module
// (tests/python/test_report_objects.py) that holds every record with a
// field table and, for a document of one, gives the Python objects
// report_objects.h writes beside those of its JSON, and times both.
//
//   records() -> [name, ...]
//   field_names(name) -> [key, ...]         report::FieldNames<T>()
//   convert(name, document) -> (ToPython(record),
//                               FromJson(report::ToJson(record)))
//   time_conversion(name, document, number) -> (json_seconds, old_seconds,
//                                               new_seconds)
//   round_trip(name, document) -> (back == record, back == via_json,
//                                  ToPython(back))
//   read_errors(name, document) -> (json_error, python_error)
//   time_reading(name, document, number) -> (old_seconds, new_seconds,
//                                            check_seconds)
// where record is the document read as the record (ToJson then
// report::FromJson<T>; a ValueError names a bad document's path), and the
// times are per conversion over `number` conversions: ToJson alone, ToJson
// then FromJson (the path the extension module took before), ToPython.
// round_trip reads ToPython(record) back with FromPython<T>
// (report_from_objects.h) as `back`, and report::ToJson(record) back with
// report::FromJson<T> as `via_json`. read_errors reads the document both
// ways, ToJson then report::FromJson<T> and FromPython<T>, each error's
// text or None. time_reading times reading the document as the record:
// ToJson then report::FromJson<T> (the extension module's old path),
// CheckJsonData then FromPython<T> (its new one), and CheckJsonData alone.

// Python.h before any standard header (python_objects.h) ...
#include "python/operators/python_objects.h"
// ... then the others.
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "crawl/crawl_document.h"
#include "python/operators/report_from_objects.h"
#include "python/operators/report_objects.h"
#include "report/analysis_report.h"
#include "report/communication.h"
#include "report/compare.h"
#include "report/diagnostic.h"
#include "report/field_table.h"
#include "report/flop_report.h"
#include "report/job_merge.h"
#include "report/json_io.h"
#include "report/json_reader.h"
#include "report/layer_report.h"
#include "report/metric_result.h"
#include "report/render/roofline_plot.h"
#include "report/report_diff.h"
#include "report/value_metadata.h"
#include "torchscan_dispatch/compiled_graph_spec.h"

namespace torchscan::dispatch {
namespace {

using report::Json;

struct Record {
  const char* name;
  PyObject* (*field_names)();
  PyObject* (*convert)(PyObject* document);
  PyObject* (*time)(PyObject* document, Py_ssize_t number);
  PyObject* (*round_trip)(PyObject* document);
  PyObject* (*read_errors)(PyObject* document);
  PyObject* (*time_reading)(PyObject* document, Py_ssize_t number);
};

template <typename T>
bool Read(const char* name, PyObject* document, std::optional<T>* out) {
  Json json;
  if (!ToJson(document, name, &json)) return false;
  absl::StatusOr<T> record = report::FromJson<T>(report::JsonValue(json, name));
  if (!record.ok()) return RaiseValueError(record.status());
  out->emplace(*std::move(record));
  return true;
}

template <typename T>
PyObject* FieldNames() {
  std::vector<absl::string_view> names = report::FieldNames<T>();
  OwnedRef list(PyList_New(0));
  for (absl::string_view name : names) {
    OwnedRef text(PythonText(name));
    if (!list || !text || PyList_Append(list.get(), text.get()) < 0) {
      return nullptr;
    }
  }
  return list.release();
}

template <typename T, const char* kName>
PyObject* Convert(PyObject* document) {
  std::optional<T> record;
  if (!Read(kName, document, &record)) return nullptr;
  OwnedRef fresh(ToPython(*record));
  if (!fresh) return nullptr;
  OwnedRef old(FromJson(report::ToJson(*record)));
  if (!old) return nullptr;
  return PyTuple_Pack(2, fresh.get(), old.get());
}

// Seconds per call of `body` over `number` calls; false when one fails.
template <typename Body>
bool Seconds(Py_ssize_t number, Body body, double* out) {
  const auto start = std::chrono::steady_clock::now();
  for (Py_ssize_t i = 0; i < number; ++i) {
    if (!body()) return false;
  }
  const std::chrono::duration<double> spent =
      std::chrono::steady_clock::now() - start;
  *out = spent.count() / static_cast<double>(number);
  return true;
}

template <typename T, const char* kName>
PyObject* Time(PyObject* document, Py_ssize_t number) {
  std::optional<T> maybe;
  if (!Read(kName, document, &maybe)) return nullptr;
  const T& record = *maybe;
  double json = 0, old = 0, fresh = 0;
  std::size_t sink = 0;
  const bool ok =
      Seconds(
          number,
          [&] {
            sink += report::ToJson(record).size();
            return true;
          },
          &json) &&
      Seconds(
          number,
          [&] { return OwnedRef(FromJson(report::ToJson(record))).get(); },
          &old) &&
      Seconds(
          number, [&] { return OwnedRef(ToPython(record)).get(); }, &fresh);
  if (!ok) return nullptr;
  return sink == 0 ? nullptr : Py_BuildValue("(ddd)", json, old, fresh);
}

template <typename T, const char* kName>
PyObject* RoundTrip(PyObject* document) {
  std::optional<T> record;
  if (!Read(kName, document, &record)) return nullptr;
  OwnedRef objects(ToPython(*record));
  if (!objects) return nullptr;
  absl::StatusOr<T> back = FromPython<T>(objects.get(), kName);
  if (!back.ok()) return NoneOrRaise(RaiseValueError(back.status()));
  const Json json = report::ToJson(*record);
  absl::StatusOr<T> via_json =
      report::FromJson<T>(report::JsonValue(json, kName));
  if (!via_json.ok()) return NoneOrRaise(RaiseValueError(via_json.status()));
  OwnedRef written(ToPython(*back));
  if (!written) return nullptr;
  return Py_BuildValue("(OOO)", *back == *record ? Py_True : Py_False,
                       *back == *via_json ? Py_True : Py_False, written.get());
}

// The text of `status`'s error as a str, or None when it is OK.
PyObject* ErrorText(const absl::Status& status) {
  if (status.ok()) return Py_NewRef(Py_None);
  return PythonText(status.message());
}

template <typename T, const char* kName>
PyObject* ReadErrors(PyObject* document) {
  Json json;
  if (!ToJson(document, kName, &json)) return nullptr;
  OwnedRef json_error(
      ErrorText(report::FromJson<T>(report::JsonValue(json, kName)).status()));
  OwnedRef python_error(ErrorText(FromPython<T>(document, kName).status()));
  if (!json_error || !python_error) return nullptr;
  return PyTuple_Pack(2, json_error.get(), python_error.get());
}

template <typename T, const char* kName>
PyObject* TimeReading(PyObject* document, Py_ssize_t number) {
  double old = 0, fresh = 0, check = 0;
  const bool ok =
      Seconds(
          number,
          [&] {
            Json json;
            return ToJson(document, kName, &json) &&
                   report::FromJson<T>(report::JsonValue(json, kName)).ok();
          },
          &old) &&
      Seconds(
          number,
          [&] {
            return CheckJsonData(document, kName) &&
                   FromPython<T>(document, kName).ok();
          },
          &fresh) &&
      Seconds(
          number, [&] { return CheckJsonData(document, kName); }, &check);
  if (!ok) {
    if (!PyErr_Occurred()) {
      PyErr_SetString(PyExc_ValueError, "the document is not the record");
    }
    return nullptr;
  }
  return Py_BuildValue("(ddd)", old, fresh, check);
}

// NOTE [Record names as template arguments]
// Convert and Time name the record in errors and need the name as a
// constant: each has a static array of its own.
#define TORCHSCAN_RECORD(Type, Name)          \
  [] {                                        \
    static constexpr char kName[] = Name;     \
    return Record{kName,                      \
                  &FieldNames<Type>,          \
                  &Convert<Type, kName>,      \
                  &Time<Type, kName>,         \
                  &RoundTrip<Type, kName>,    \
                  &ReadErrors<Type, kName>,   \
                  &TimeReading<Type, kName>}; \
  }()

const std::vector<Record>& Records() {
  static const auto* const records = new std::vector<Record>{
      TORCHSCAN_RECORD(report::MetricKind, "MetricKind"),
      TORCHSCAN_RECORD(report::MetricResult, "MetricResult"),
      TORCHSCAN_RECORD(report::Diagnostic, "Diagnostic"),
      TORCHSCAN_RECORD(report::ValueMetadata, "ValueMetadata"),
      TORCHSCAN_RECORD(report::MappingItem, "MappingItem"),
      TORCHSCAN_RECORD(report::CallMetadata, "CallMetadata"),
      TORCHSCAN_RECORD(report::ParameterAttribution, "ParameterAttribution"),
      TORCHSCAN_RECORD(report::BufferAttribution, "BufferAttribution"),
      TORCHSCAN_RECORD(report::LayerReport, "LayerReport"),
      TORCHSCAN_RECORD(report::OperatorBytes, "OperatorBytes"),
      TORCHSCAN_RECORD(report::BytesMoved, "BytesMoved"),
      TORCHSCAN_RECORD(report::IgnoredOperator, "IgnoredOperator"),
      TORCHSCAN_RECORD(report::MaskAwareFlops, "MaskAwareFlops"),
      TORCHSCAN_RECORD(report::FlopReport, "FlopReport"),
      TORCHSCAN_RECORD(report::ReportContext, "ReportContext"),
      TORCHSCAN_RECORD(report::InputsMetadata, "InputsMetadata"),
      TORCHSCAN_RECORD(report::LayerOperatorFlops, "LayerOperatorFlops"),
      TORCHSCAN_RECORD(report::AnalysisReport, "AnalysisReport"),
      TORCHSCAN_RECORD(report::CommunicationTotals, "CommunicationTotals"),
      TORCHSCAN_RECORD(report::UnreadableCollective, "UnreadableCollective"),
      TORCHSCAN_RECORD(report::CommunicationReport, "CommunicationReport"),
      TORCHSCAN_RECORD(report::ComparableLayer, "ComparableLayer"),
      TORCHSCAN_RECORD(report::ComparableReport, "ComparableReport"),
      TORCHSCAN_RECORD(report::MetricDiff, "MetricDiff"),
      TORCHSCAN_RECORD(report::LayerSnapshot, "LayerSnapshot"),
      TORCHSCAN_RECORD(report::LayerDiff, "LayerDiff"),
      TORCHSCAN_RECORD(report::ReportDiff, "ReportDiff"),
      TORCHSCAN_RECORD(report::MeshDimension, "MeshDimension"),
      TORCHSCAN_RECORD(report::DistributedContext, "DistributedContext"),
      TORCHSCAN_RECORD(report::RankReport, "RankReport"),
      TORCHSCAN_RECORD(report::JobMetric, "JobMetric"),
      TORCHSCAN_RECORD(report::JobBytes, "JobBytes"),
      TORCHSCAN_RECORD(report::JobReport, "JobReport"),
      TORCHSCAN_RECORD(report::render::RooflineDevice, "RooflineDevice"),
      TORCHSCAN_RECORD(SpecSymbol, "SpecSymbol"),
      TORCHSCAN_RECORD(SpecValue, "SpecValue"),
      TORCHSCAN_RECORD(SpecCall, "SpecCall"),
      TORCHSCAN_RECORD(CompiledGraphSpec, "CompiledGraphSpec"),
      TORCHSCAN_RECORD(crawl::LeafCallDocument, "LeafCallDocument"),
      TORCHSCAN_RECORD(crawl::CrawlDocument, "CrawlDocument"),
  };
  return *records;
}

#undef TORCHSCAN_RECORD

// The record `name` names; nullptr with a KeyError otherwise.
const Record* Find(PyObject* name) {
  std::string text;
  if (!Utf8(name, &text)) return nullptr;
  for (const Record& record : Records()) {
    if (text == record.name) return &record;
  }
  PyErr_SetObject(PyExc_KeyError, name);
  return nullptr;
}

PyObject* RecordNames(PyObject*, PyObject* const*, Py_ssize_t nargs) {
  if (!CheckArguments("_report_objects_check", "records", nargs, 0)) {
    return nullptr;
  }
  OwnedRef list(PyList_New(0));
  for (const Record& record : Records()) {
    OwnedRef text(PyUnicode_FromString(record.name));
    if (!list || !text || PyList_Append(list.get(), text.get()) < 0) {
      return nullptr;
    }
  }
  return list.release();
}

PyObject* FieldNamesOf(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!CheckArguments("_report_objects_check", "field_names", nargs, 1)) {
    return nullptr;
  }
  const Record* record = Find(args[0]);
  return record == nullptr ? nullptr : record->field_names();
}

PyObject* ConvertDocument(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!CheckArguments("_report_objects_check", "convert", nargs, 2)) {
    return nullptr;
  }
  const Record* record = Find(args[0]);
  return record == nullptr ? nullptr : record->convert(args[1]);
}

// A timing call's repetition count; 0 with a Python error set when it is
// not a positive int.
Py_ssize_t PositiveNumber(PyObject* value) {
  const Py_ssize_t number = PyLong_AsSsize_t(value);
  if (number == -1 && PyErr_Occurred()) return 0;
  if (number <= 0) {
    PyErr_SetString(PyExc_ValueError, "number must be positive");
    return 0;
  }
  return number;
}

PyObject* TimeConversion(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!CheckArguments("_report_objects_check", "time_conversion", nargs, 3)) {
    return nullptr;
  }
  const Record* record = Find(args[0]);
  if (record == nullptr) return nullptr;
  const Py_ssize_t number = PositiveNumber(args[2]);
  if (number <= 0) return nullptr;
  return record->time(args[1], number);
}

PyObject* RoundTripDocument(PyObject*, PyObject* const* args,
                            Py_ssize_t nargs) {
  if (!CheckArguments("_report_objects_check", "round_trip", nargs, 2)) {
    return nullptr;
  }
  const Record* record = Find(args[0]);
  return record == nullptr ? nullptr : record->round_trip(args[1]);
}

PyObject* ReadErrorsOf(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!CheckArguments("_report_objects_check", "read_errors", nargs, 2)) {
    return nullptr;
  }
  const Record* record = Find(args[0]);
  return record == nullptr ? nullptr : record->read_errors(args[1]);
}

PyObject* TimeReadingOf(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!CheckArguments("_report_objects_check", "time_reading", nargs, 3)) {
    return nullptr;
  }
  const Record* record = Find(args[0]);
  if (record == nullptr) return nullptr;
  const Py_ssize_t number = PositiveNumber(args[2]);
  if (number <= 0) return nullptr;
  return record->time_reading(args[1], number);
}

PyMethodDef kFunctions[] = {
    {"records", AsCFunction(RecordNames), METH_FASTCALL,
     "records() -> list: the names of the records held."},
    {"field_names", AsCFunction(FieldNamesOf), METH_FASTCALL,
     "field_names(name) -> list: the keys of the record's table."},
    {"convert", AsCFunction(ConvertDocument), METH_FASTCALL,
     "convert(name, document) -> (new, old): the document read as the "
     "record, as ToPython and as FromJson(ToJson) write it."},
    {"time_conversion", AsCFunction(TimeConversion), METH_FASTCALL,
     "time_conversion(name, document, number) -> (json, old, new): seconds "
     "per conversion."},
    {"round_trip", AsCFunction(RoundTripDocument), METH_FASTCALL,
     "round_trip(name, document) -> (equal, equal_to_json, objects): the "
     "record's Python objects read back by FromPython."},
    {"read_errors", AsCFunction(ReadErrorsOf), METH_FASTCALL,
     "read_errors(name, document) -> (json_error, python_error): each "
     "reader's error text, or None."},
    {"time_reading", AsCFunction(TimeReadingOf), METH_FASTCALL,
     "time_reading(name, document, number) -> (old, new, check): seconds "
     "per reading."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT,
    "_report_objects_check",
    nullptr,
    0,
    kFunctions,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

}  // namespace
}  // namespace torchscan::dispatch

PyMODINIT_FUNC PyInit__report_objects_check() {
  return PyModule_Create(&torchscan::dispatch::kModule);
}
