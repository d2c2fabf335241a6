// The bits of Python behaviour TorchScan's module formulas depend on, so that
// ours fail where upstream's fail, with the same exception class and message.
//
// A formula step returns Py<T>: a value, or the exception Python would have
// raised at that point. Formulas evaluate in the order Python does, so the
// first failing step names the same error upstream reports.

#ifndef TORCHSCAN_FORMULAS_PYTHON_SEMANTICS_H_
#define TORCHSCAN_FORMULAS_PYTHON_SEMANTICS_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "formulas/exact_count.h"
#include "formulas/formula_outcome.h"
#include "formulas/module_call.h"
#include "formulas/module_description.h"

namespace torchscan::formulas::python {

template <typename T>
class Py {
 public:
  Py(T value) : value_(std::move(value)) {}  // NOLINT(runtime/explicit)
  Py(FormulaError error)                     // NOLINT(runtime/explicit)
      : error_(std::move(error)) {}

  bool ok() const { return !error_.has_value(); }
  const T& operator*() const { return *value_; }
  const T* operator->() const { return &*value_; }
  const FormulaError& error() const { return *error_; }

 private:
  std::optional<T> value_;
  std::optional<FormulaError> error_;
};

// Python's exception propagation, for a function returning Py<U>: binds the
// value of the Py<T> step `expr` to `lhs`, or returns the step's exception.
//
//   TS_PY_ASSIGN_OR_RAISE(const Dims* shape, ShapeOf(value));
#define TS_PY_ASSIGN_OR_RAISE(lhs, expr) \
  TS_PY_ASSIGN_OR_RAISE_IMPL_(TS_PY_CONCAT_(ts_py_step_, __LINE__), lhs, expr)
#define TS_PY_ASSIGN_OR_RAISE_IMPL_(step, lhs, expr) \
  auto step = (expr);                                \
  if (!step.ok()) return step.error();               \
  lhs = *step
#define TS_PY_CONCAT_(a, b) TS_PY_CONCAT_IMPL_(a, b)
#define TS_PY_CONCAT_IMPL_(a, b) a##b

// CPython's messages (3.11).
inline constexpr absl::string_view kIntegerDivisionByZero =
    "integer division or modulo by zero";  // a // 0
inline constexpr absl::string_view kIntegerModuloByZero =
    "integer modulo by zero";  // a % 0
inline constexpr absl::string_view kDivisionByZero =
    "division by zero";  // 1 / 0
inline constexpr absl::string_view kFloatDivisionByZero =
    "float division by zero";  // 1.0 / 0

FormulaError Raise(absl::string_view type, absl::string_view message);
// "'NoneType' object has no attribute 'numel'"
FormulaError AttributeError(const CallValue& value,
                            absl::string_view attribute);
// "tuple index out of range"
FormulaError TupleIndexError();

// A Python tuple of values. Items are never null: they point into a
// ModuleCall or at the shared None / False values below.
using PyTuple = std::vector<const CallValue*>;
const CallValue& NoneValue();
const CallValue& FalseValue();
PyTuple TupleOf(absl::Span<const CallValue> values);
// `value` when set, else None.
const CallValue& OrNone(const CallValue* value);

// tuple[index]; IndexError past the end.
Py<const CallValue*> ItemAt(const PyTuple& tuple, std::size_t index);
// `tuple[index] if len(tuple) > index else None`.
const CallValue* ItemOrNone(const PyTuple& tuple, std::size_t index);

// Tensor attributes; AttributeError for anything but a tensor.
Py<const Dims*> ShapeOf(const CallValue& value);
Py<ExactCount> NumelOf(const CallValue& value);
Py<std::int64_t> NdimOf(const CallValue& value);

// shape[index], negative indices counting from the end; IndexError outside.
Py<std::int64_t> DimAt(const Dims& shape, std::int64_t index);
// shape[start:] and shape[:-1].
absl::Span<const std::int64_t> DimsFrom(const Dims& shape, std::size_t start);
absl::Span<const std::int64_t> AllButLast(const Dims& shape);

// math.prod of a hyper-parameter stored as a tuple (formulas only call it on
// tuples: torch stores Conv kernels as tuples).
ExactCount ProductOf(const HyperParameter& value);
// len() of a tuple hyper-parameter.
std::int64_t LengthOf(const HyperParameter& value);
// torchscan's receptive-field `_first`: value[0] for a tuple (IndexError when
// empty), the value itself otherwise.
Py<HyperParameter> First(const HyperParameter& value);

// `a // b` on integers; ZeroDivisionError for b == 0.
Py<ExactCount> FloorDivide(ExactCount a, ExactCount b);

}  // namespace torchscan::formulas::python

#endif  // TORCHSCAN_FORMULAS_PYTHON_SEMANTICS_H_
