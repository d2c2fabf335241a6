#include "torchscan_dispatch/operator_values.h"

#include <optional>

#include <ATen/core/Tensor.h>
#include <ATen/core/List.h>

namespace torchscan::dispatch {
namespace {

using formulas::OperatorValue;
using formulas::Shape;

// Sizes of a strided tensor, or nullopt for symbolic or nested sizes.
std::optional<Shape> ConcreteShape(const at::Tensor& tensor) {
  if (tensor.is_nested()) return std::nullopt;
  const c10::TensorImpl* impl = tensor.unsafeGetTensorImpl();
  if (impl->has_symbolic_sizes_strides()) {
    Shape shape;
    for (const c10::SymInt& size : tensor.sym_sizes()) {
      std::optional<std::int64_t> concrete = size.maybe_as_int();
      if (!concrete) return std::nullopt;
      shape.push_back(*concrete);
    }
    return shape;
  }
  const c10::IntArrayRef sizes = tensor.sizes();
  return Shape(sizes.begin(), sizes.end());
}

OperatorValue FromTensor(const at::Tensor& tensor) {
  if (!tensor.defined()) return OperatorValue::None();
  std::optional<Shape> shape = ConcreteShape(tensor);
  return shape ? OperatorValue::Tensor(*std::move(shape))
               : OperatorValue::UnknownShapeTensor();
}

}  // namespace

OperatorValue ToOperatorValue(const c10::IValue& value) {
  if (value.isTensor()) return FromTensor(value.toTensor());
  if (value.isNone()) return OperatorValue::None();
  if (value.isBool()) return OperatorValue::Bool(value.toBool());
  if (value.isInt()) return OperatorValue::Int(value.toInt());
  if (value.isSymInt()) {
    if (std::optional<std::int64_t> concrete = value.toSymInt().maybe_as_int()) {
      return OperatorValue::Int(*concrete);
    }
    return OperatorValue{};
  }
  if (value.isDouble()) {
    OperatorValue real = OperatorValue::OfKind(OperatorValue::Kind::kDouble);
    real.real = value.toDouble();
    return real;
  }
  if (value.isIntList()) return OperatorValue::IntList(value.toIntVector());
  if (value.isBoolList()) {
    std::vector<bool> booleans;
    for (bool b : value.toBoolList()) booleans.push_back(b);
    return OperatorValue::BoolList(std::move(booleans));
  }
  if (value.isTensorList() || value.isOptionalTensorList() || value.isList()) {
    OperatorValue list = OperatorValue::OfKind(OperatorValue::Kind::kTensorList);
    std::vector<std::int64_t> integers;
    bool all_integers = true;
    for (const c10::IValue& item : value.toListRef()) {
      if (item.isTensor() && item.toTensor().defined()) {
        all_integers = false;
        std::optional<Shape> shape = ConcreteShape(item.toTensor());
        list.shapes.push_back(shape);
        if (!shape) list.shape_unknown = true;
      } else if (item.isNone() || item.isTensor()) {
        all_integers = false;
        list.shapes.push_back(std::nullopt);
      } else if (item.isInt() ||
                 (item.isSymInt() && item.toSymInt().maybe_as_int().has_value())) {
        integers.push_back(item.isInt() ? item.toInt()
                                        : *item.toSymInt().maybe_as_int());
      } else {
        return OperatorValue{};
      }
    }
    // A SymInt[] with concrete values arrives as a generic list of ints.
    if (all_integers && !integers.empty()) {
      return OperatorValue::IntList(std::move(integers));
    }
    return list;
  }
  return OperatorValue{};
}

std::vector<OperatorValue> ToOperatorValues(c10::ArrayRef<c10::IValue> values) {
  std::vector<OperatorValue> converted;
  converted.reserve(values.size());
  for (const c10::IValue& value : values) converted.push_back(ToOperatorValue(value));
  return converted;
}

}  // namespace torchscan::dispatch
