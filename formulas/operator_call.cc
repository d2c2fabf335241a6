#include "formulas/operator_call.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace torchscan::formulas {

OperatorValue OperatorValue::OfKind(Kind kind) {
  OperatorValue value;
  value.kind = kind;
  return value;
}

OperatorValue OperatorValue::Tensor(Shape shape) {
  OperatorValue value = OfKind(Kind::kTensor);
  value.shape = std::move(shape);
  return value;
}

OperatorValue OperatorValue::UnknownShapeTensor() {
  OperatorValue value = OfKind(Kind::kTensor);
  value.shape_unknown = true;
  return value;
}

OperatorValue OperatorValue::Int(std::int64_t integer) {
  OperatorValue value = OfKind(Kind::kInt);
  value.integer = integer;
  return value;
}

OperatorValue OperatorValue::Bool(bool boolean) {
  OperatorValue value = OfKind(Kind::kBool);
  value.boolean = boolean;
  return value;
}

OperatorValue OperatorValue::IntList(std::vector<std::int64_t> integers) {
  OperatorValue value = OfKind(Kind::kIntList);
  value.integers.assign(integers.begin(), integers.end());
  return value;
}

OperatorValue OperatorValue::BoolList(std::vector<bool> booleans) {
  OperatorValue value = OfKind(Kind::kBoolList);
  value.booleans.assign(booleans.begin(), booleans.end());
  return value;
}

OperatorValue OperatorValue::Real(double real) {
  OperatorValue value = OfKind(Kind::kDouble);
  value.real = real;
  return value;
}

absl::StatusOr<absl::Span<const std::int64_t>> TensorShapeAt(
    absl::Span<const OperatorValue> values, std::size_t index,
    absl::string_view role) {
  if (index >= values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(role, " (argument ", index, ") is missing"));
  }
  const OperatorValue& value = values[index];
  if (!value.is_tensor()) {
    return absl::InvalidArgumentError(
        absl::StrCat(role, " (argument ", index, ") is not a tensor"));
  }
  if (value.shape_unknown) {
    return absl::UnimplementedError(absl::StrCat(
        role, " has symbolic or nested sizes, which FLOP formulas cannot use"));
  }
  return absl::Span<const std::int64_t>(value.shape);
}

}  // namespace torchscan::formulas
