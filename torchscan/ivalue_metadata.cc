#include "torchscan/ivalue_metadata.h"

#include <ATen/core/Dict.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/class_type.h>

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace torchscan {
namespace {

using report::ValueMetadata;

bool IsIdentifier(const std::string& text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0])))
    return false;
  for (char c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// type(key).__name__ of the Python value TorchScript's key stands for.
std::string KeyType(const c10::IValue& key) {
  if (key.isBool()) return "bool";
  if (key.isInt()) return "int";
  if (key.isDouble()) return "float";
  if (key.isComplexDouble()) return "complex";
  if (key.isString()) return "str";
  if (key.isTensor()) return "Tensor";
  return "object";
}

}  // namespace

std::string PythonDtypeName(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float:
      return "torch.float32";
    case c10::ScalarType::Double:
      return "torch.float64";
    case c10::ScalarType::Half:
      return "torch.float16";
    case c10::ScalarType::BFloat16:
      return "torch.bfloat16";
    case c10::ScalarType::Long:
      return "torch.int64";
    case c10::ScalarType::Int:
      return "torch.int32";
    case c10::ScalarType::Short:
      return "torch.int16";
    case c10::ScalarType::Char:
      return "torch.int8";
    case c10::ScalarType::Byte:
      return "torch.uint8";
    case c10::ScalarType::Bool:
      return "torch.bool";
    case c10::ScalarType::ComplexFloat:
      return "torch.complex64";
    case c10::ScalarType::ComplexDouble:
      return "torch.complex128";
    case c10::ScalarType::ComplexHalf:
      return "torch.complex32";
    default:
      return "torch." + absl::AsciiStrToLower(c10::toString(type));
  }
}

std::string DemangledClassName(const std::string& qualified_name) {
  absl::string_view name = qualified_name;
  absl::ConsumePrefix(&name, "__torch__.");
  std::vector<std::string> parts;
  for (absl::string_view part : absl::StrSplit(name, '.')) {
    if (!absl::StartsWith(part, "___torch_mangle_")) parts.emplace_back(part);
  }
  return absl::StrJoin(parts, ".");
}

std::string ShortClassName(const std::string& qualified_name) {
  const std::string demangled = DemangledClassName(qualified_name);
  const std::size_t dot = demangled.rfind('.');
  return dot == std::string::npos ? demangled : demangled.substr(dot + 1);
}

ValueMetadata DescribeValue(const c10::IValue& value) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    if (!tensor.defined()) return ValueMetadata::None();
    return ValueMetadata::Tensor(tensor.sizes().vec(),
                                 PythonDtypeName(tensor.scalar_type()),
                                 tensor.device().str(), tensor.requires_grad());
  }
  if (value.isNone()) return ValueMetadata::None();
  if (value.isTuple()) {
    std::vector<ValueMetadata> items;
    for (const c10::IValue& item : value.toTupleRef().elements()) {
      items.push_back(DescribeValue(item));
    }
    return ValueMetadata::Tuple(std::move(items));
  }
  if (value.isList()) {
    std::vector<ValueMetadata> items;
    for (const c10::IValue& item : value.toListRef()) {
      items.push_back(DescribeValue(item));
    }
    return ValueMetadata::List(std::move(items));
  }
  if (value.isGenericDict()) {
    std::vector<report::MappingItem> entries;
    for (const auto& entry : value.toGenericDict()) {
      report::MappingItem item;
      const c10::IValue& key = entry.key();
      if (key.isBool()) {
        item.key = key.toBool();
      } else if (key.isInt()) {
        item.key = report::Count(key.toInt());
      } else if (key.isString() && IsIdentifier(key.toStringRef())) {
        item.key = key.toStringRef();
      }
      item.key_type = KeyType(key);
      item.value = DescribeValue(entry.value());
      entries.push_back(std::move(item));
    }
    return ValueMetadata::Mapping("dict", std::move(entries));
  }
  if (value.isBool()) return ValueMetadata::Scalar("bool");
  if (value.isInt() || value.isSymInt()) return ValueMetadata::Scalar("int");
  if (value.isDouble() || value.isSymFloat()) {
    return ValueMetadata::Scalar("float");
  }
  if (value.isComplexDouble()) return ValueMetadata::Scalar("complex");
  if (value.isString()) return ValueMetadata::Scalar("str");
  if (value.isObject()) {
    return ValueMetadata::Object(
        ShortClassName(value.toObjectRef().type()->name()->qualifiedName()));
  }
  if (value.isDevice()) return ValueMetadata::Object("device");
  // An enum member: type(member).__qualname__ is its Enum class's.
  if (value.isEnum()) {
    return ValueMetadata::Object(
        ShortClassName(value.toEnumHolder()->qualifiedClassName()));
  }
  return ValueMetadata::Object(value.tagKind());
}

report::CallMetadata DescribeCall(const std::vector<c10::IValue>& args) {
  report::CallMetadata call;
  for (const c10::IValue& arg : args) call.args.push_back(DescribeValue(arg));
  return call;
}

}  // namespace torchscan
