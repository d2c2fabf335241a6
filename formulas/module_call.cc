#include "formulas/module_call.h"

#include <utility>
#include <vector>

namespace torchscan::formulas {
namespace {

// CPython truncates class names to 50 characters in attribute errors
// ("'%.50s' object has no attribute '%U'").
constexpr std::size_t kPythonTypeNameLimit = 50;

CallValue OfKind(CallValue::Kind kind) {
  CallValue value;
  value.kind = kind;
  return value;
}

}  // namespace

CallValue CallValue::Tensor(Dims shape) {
  CallValue value = OfKind(Kind::kTensor);
  value.shape = std::move(shape);
  return value;
}

CallValue CallValue::None() { return OfKind(Kind::kNone); }

CallValue CallValue::Tuple(std::vector<CallValue> items) {
  CallValue value = OfKind(Kind::kTuple);
  value.items = std::move(items);
  return value;
}

CallValue CallValue::List(std::vector<CallValue> items) {
  CallValue value = OfKind(Kind::kList);
  value.items = std::move(items);
  return value;
}

CallValue CallValue::Mapping(std::string type, std::vector<CallValue> values) {
  CallValue value = OfKind(Kind::kMapping);
  value.type = std::move(type);
  value.items = std::move(values);
  return value;
}

CallValue CallValue::Scalar(std::string type) {
  CallValue value = OfKind(Kind::kScalar);
  value.type = std::move(type);
  return value;
}

CallValue CallValue::Object(std::string type) {
  CallValue value = OfKind(Kind::kObject);
  value.type = std::move(type);
  return value;
}

CallValue CallValueOf(const report::ValueMetadata& value) {
  std::vector<CallValue> items;
  for (const report::ValueMetadata& item : value.items) {
    items.push_back(CallValueOf(item));
  }
  for (const report::MappingItem& entry : value.entries) {
    items.push_back(CallValueOf(entry.value));
  }
  switch (value.kind) {
    case report::ValueKind::kTensor:
      return CallValue::Tensor(value.shape);
    case report::ValueKind::kTuple:
      return CallValue::Tuple(std::move(items));
    case report::ValueKind::kList:
      return CallValue::List(std::move(items));
    case report::ValueKind::kMapping:
      return CallValue::Mapping(value.type, std::move(items));
    case report::ValueKind::kScalar:
      return CallValue::Scalar(value.type);
    case report::ValueKind::kObject:
      return CallValue::Object(value.type);
    case report::ValueKind::kNone:
    case report::ValueKind::kPending:
      break;
  }
  return CallValue::None();
}

std::string PythonTypeName(const CallValue& value) {
  std::string name;
  switch (value.kind) {
    case CallValue::Kind::kTensor:
      name = "Tensor";
      break;
    case CallValue::Kind::kNone:
      name = "NoneType";
      break;
    case CallValue::Kind::kTuple:
      name = value.type.empty() ? "tuple" : value.type;
      break;
    case CallValue::Kind::kList:
      name = value.type.empty() ? "list" : value.type;
      break;
    case CallValue::Kind::kMapping:
    case CallValue::Kind::kScalar:
      name = value.type;
      break;
    case CallValue::Kind::kObject: {
      // The metadata has the qualified name ("Outer.Inner",
      // "f.<locals>.Cls"); Python prints the class's own name.
      const std::size_t dot = value.type.rfind('.');
      name = dot == std::string::npos ? value.type : value.type.substr(dot + 1);
      break;
    }
  }
  if (name.size() > kPythonTypeNameLimit) name.resize(kPythonTypeNameLimit);
  return name;
}

const CallValue* FirstTensor(const CallValue& value) {
  switch (value.kind) {
    case CallValue::Kind::kTensor:
      return &value;
    case CallValue::Kind::kTuple:
    case CallValue::Kind::kList:
    case CallValue::Kind::kMapping:
      return FirstTensor(value.items);
    default:
      return nullptr;
  }
}

const CallValue* FirstTensor(absl::Span<const CallValue> values) {
  for (const CallValue& value : values) {
    if (const CallValue* tensor = FirstTensor(value)) return tensor;
  }
  return nullptr;
}

}  // namespace torchscan::formulas
