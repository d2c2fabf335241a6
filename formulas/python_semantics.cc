#include "formulas/python_semantics.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace torchscan::formulas::python {

FormulaError Raise(absl::string_view type, absl::string_view message) {
  return FormulaError{std::string(type), std::string(message)};
}

FormulaError AttributeError(const CallValue& value,
                            absl::string_view attribute) {
  return Raise("AttributeError",
               absl::StrCat("'", PythonTypeName(value),
                            "' object has no attribute '", attribute, "'"));
}

FormulaError TupleIndexError() {
  return Raise("IndexError", "tuple index out of range");
}

const CallValue& NoneValue() {
  static const CallValue* const kNone = new CallValue(CallValue::None());
  return *kNone;
}

const CallValue& FalseValue() {
  static const CallValue* const kFalse =
      new CallValue(CallValue::Scalar("bool"));
  return *kFalse;
}

PyTuple TupleOf(absl::Span<const CallValue> values) {
  PyTuple tuple;
  tuple.reserve(values.size());
  for (const CallValue& value : values) tuple.push_back(&value);
  return tuple;
}

const CallValue& OrNone(const CallValue* value) {
  return value != nullptr ? *value : NoneValue();
}

Py<const CallValue*> ItemAt(const PyTuple& tuple, std::size_t index) {
  if (index >= tuple.size()) return TupleIndexError();
  return tuple[index];
}

const CallValue* ItemOrNone(const PyTuple& tuple, std::size_t index) {
  return index < tuple.size() ? tuple[index] : &NoneValue();
}

Py<const Dims*> ShapeOf(const CallValue& value) {
  if (!value.is_tensor()) return AttributeError(value, "shape");
  return &value.shape;
}

Py<ExactCount> NumelOf(const CallValue& value) {
  if (!value.is_tensor()) return AttributeError(value, "numel");
  return ExactProduct(value.shape);
}

Py<std::int64_t> NdimOf(const CallValue& value) {
  if (!value.is_tensor()) return AttributeError(value, "ndim");
  return static_cast<std::int64_t>(value.shape.size());
}

Py<std::int64_t> DimAt(const Dims& shape, std::int64_t index) {
  const auto size = static_cast<std::int64_t>(shape.size());
  if (index < 0) index += size;
  if (index < 0 || index >= size) return TupleIndexError();
  return shape[static_cast<std::size_t>(index)];
}

absl::Span<const std::int64_t> DimsFrom(const Dims& shape, std::size_t start) {
  return absl::Span<const std::int64_t>(shape).subspan(
      std::min(start, shape.size()));
}

absl::Span<const std::int64_t> AllButLast(const Dims& shape) {
  return absl::Span<const std::int64_t>(shape).first(
      shape.empty() ? 0 : shape.size() - 1);
}

ExactCount ProductOf(const HyperParameter& value) {
  return ExactProduct(value.ints);
}

std::int64_t LengthOf(const HyperParameter& value) {
  return static_cast<std::int64_t>(value.ints.size());
}

Py<HyperParameter> First(const HyperParameter& value) {
  if (value.kind != HyperParameter::Kind::kTuple) return value;
  if (value.ints.empty()) return TupleIndexError();
  return HyperParameter::Int(value.ints.front());
}

Py<ExactCount> FloorDivide(ExactCount a, ExactCount b) {
  if (b.IsZero()) return Raise("ZeroDivisionError", kIntegerDivisionByZero);
  return FloorDiv(a, b);
}

}  // namespace torchscan::formulas::python
