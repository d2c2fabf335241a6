#include "torchscan_dispatch/operator_values.h"

#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include <optional>

#include "absl/container/inlined_vector.h"

namespace torchscan::dispatch {
namespace {

using formulas::OperatorValue;
using formulas::Shape;

// Writes the sizes of a strided tensor into `shape`; false for symbolic or
// nested sizes (`shape` is then left cleared).
bool ReadConcreteShape(const at::Tensor& tensor, Shape& shape) {
  shape.clear();
  if (tensor.is_nested()) return false;
  const c10::TensorImpl* impl = tensor.unsafeGetTensorImpl();
  if (impl->has_symbolic_sizes_strides()) {
    for (const c10::SymInt& size : tensor.sym_sizes()) {
      std::optional<std::int64_t> concrete = size.maybe_as_int();
      if (!concrete) {
        shape.clear();
        return false;
      }
      shape.push_back(*concrete);
    }
    return true;
  }
  const c10::IntArrayRef sizes = tensor.sizes();
  shape.assign(sizes.begin(), sizes.end());
  return true;
}

std::optional<Shape> ConcreteShape(const at::Tensor& tensor) {
  Shape shape;
  if (!ReadConcreteShape(tensor, shape)) return std::nullopt;
  return shape;
}

// The rarer kinds, as whole values (they may allocate).
OperatorValue ToOtherOperatorValue(const c10::IValue& value) {
  if (value.isSymInt()) {
    if (std::optional<std::int64_t> concrete =
            value.toSymInt().maybe_as_int()) {
      return OperatorValue::Int(*concrete);
    }
    return OperatorValue{};
  }
  if (value.isTensorList() || value.isOptionalTensorList() || value.isList()) {
    OperatorValue list =
        OperatorValue::OfKind(OperatorValue::Kind::kTensorList);
    absl::InlinedVector<std::int64_t, 6> integers;
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
      OperatorValue int_list =
          OperatorValue::OfKind(OperatorValue::Kind::kIntList);
      int_list.integers = std::move(integers);
      return int_list;
    }
    return list;
  }
  return OperatorValue{};
}

}  // namespace

void TensorToOperatorValueIn(const at::Tensor& tensor,
                             OperatorValue& converted) {
  if (!tensor.defined()) {
    converted.kind = OperatorValue::Kind::kNone;
    return;
  }
  converted.kind = OperatorValue::Kind::kTensor;
  converted.shape_unknown = !ReadConcreteShape(tensor, converted.shape);
}

void ToOperatorValueIn(const c10::IValue& value, OperatorValue& converted) {
  // `converted` holds the defaults: each kind sets only its own fields.
  if (value.isTensor())
    return TensorToOperatorValueIn(value.toTensor(), converted);
  if (value.isNone()) {
    converted.kind = OperatorValue::Kind::kNone;
    return;
  }
  if (value.isBool()) {
    converted.kind = OperatorValue::Kind::kBool;
    converted.boolean = value.toBool();
    return;
  }
  if (value.isInt()) {
    converted.kind = OperatorValue::Kind::kInt;
    converted.integer = value.toInt();
    return;
  }
  if (value.isDouble()) {
    converted.kind = OperatorValue::Kind::kDouble;
    converted.real = value.toDouble();
    return;
  }
  // By reference (toListRef), into inline storage (NOTE [Inline int and
  // bool lists] in formulas/operator_call.h): toIntVector and toBoolList
  // would copy them into a vector or bump the list's reference count.
  if (value.isIntList()) {
    converted.kind = OperatorValue::Kind::kIntList;
    for (const c10::IValue& item : value.toListRef()) {
      converted.integers.push_back(item.toInt());
    }
    return;
  }
  if (value.isBoolList()) {
    converted.kind = OperatorValue::Kind::kBoolList;
    for (const c10::IValue& item : value.toListRef()) {
      converted.booleans.push_back(item.toBool());
    }
    return;
  }
  converted = ToOtherOperatorValue(value);
}

OperatorValue ToOperatorValue(const c10::IValue& value) {
  OperatorValue converted;
  ToOperatorValueIn(value, converted);
  return converted;
}

OperatorValues ToOperatorValues(c10::ArrayRef<c10::IValue> values) {
  OperatorValues converted(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    ToOperatorValueIn(values[i], converted[i]);
  }
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
