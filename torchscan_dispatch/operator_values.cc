#include "torchscan_dispatch/operator_values.h"

#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include <optional>

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
    if (std::optional<std::int64_t> concrete =
            value.toSymInt().maybe_as_int()) {
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
    OperatorValue list =
        OperatorValue::OfKind(OperatorValue::Kind::kTensorList);
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
      } else if (item.isInt() || (item.isSymInt() &&
                                  item.toSymInt().maybe_as_int().has_value())) {
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
  for (const c10::IValue& value : values)
    converted.push_back(ToOperatorValue(value));
  return converted;
}

c10::IValue ToMetaIValue(const c10::IValue& value) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    if (!tensor.defined() || tensor.is_meta()) return value;
    // Nested tensors have no meta equivalent; they are kept as they are.
    if (tensor.is_nested()) return value;
    const at::TensorOptions meta = tensor.options().device(at::kMeta);
    if (tensor.unsafeGetTensorImpl()->has_symbolic_sizes_strides()) {
      return at::empty_symint(tensor.sym_sizes(), meta);
    }
    if (tensor.layout() != at::kStrided) {
      return at::empty(tensor.sizes(), meta.layout(at::kStrided));
    }
    return at::empty_strided(tensor.sizes(), tensor.strides(), meta);
  }
  if (value.isTensorList()) {
    c10::List<at::Tensor> converted;
    for (const at::Tensor& tensor : value.toTensorVector()) {
      converted.push_back(ToMetaIValue(tensor).toTensor());
    }
    return converted;
  }
  if (value.isList()) {
    c10::impl::GenericList converted(value.toList().elementType());
    for (const c10::IValue& item : value.toListRef()) {
      converted.push_back(ToMetaIValue(item));
    }
    return converted;
  }
  if (value.isTuple()) {
    std::vector<c10::IValue> items;
    for (const c10::IValue& item : value.toTupleRef().elements()) {
      items.push_back(ToMetaIValue(item));
    }
    return c10::ivalue::Tuple::create(std::move(items));
  }
  return value;
}

void ReadIntegerValues(const c10::IValue& value, OperatorValue& converted) {
  if (!value.isTensor()) return;
  const at::Tensor& tensor = value.toTensor();
  if (!tensor.defined() || tensor.dim() != 1 || tensor.is_meta() ||
      tensor.is_nested() ||
      tensor.unsafeGetTensorImpl()->is_python_dispatch() ||
      !c10::isIntegralType(tensor.scalar_type(), /*includeBool=*/false)) {
    return;
  }
  const at::Tensor host = tensor.to(at::kCPU, at::kLong).contiguous();
  const std::int64_t* data = host.const_data_ptr<std::int64_t>();
  converted.values.emplace(data, data + host.numel());
}

}  // namespace torchscan::dispatch
