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

using report::Json;

bool IsIdentifier(const std::string& text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0])))
    return false;
  for (char c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

Json Scalar(const char* type) {
  Json node = Json::object();
  node["kind"] = "scalar";
  node["type"] = type;
  return node;
}

Json Items(const char* kind, const std::vector<Json>& items) {
  Json node = Json::object();
  node["kind"] = kind;
  node["items"] = Json::array();
  for (const Json& item : items) node["items"].push_back(item);
  return node;
}

std::string KeyType(const c10::IValue& key) {
  if (key.isBool()) return "bool";
  if (key.isInt()) return "int";
  if (key.isDouble()) return "float";
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

Json DescribeValue(const c10::IValue& value) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    if (!tensor.defined()) return Json{{"kind", "none"}};
    Json node = Json::object();
    node["kind"] = "tensor";
    node["shape"] = Json::array();
    for (std::int64_t size : tensor.sizes()) node["shape"].push_back(size);
    node["dtype"] = PythonDtypeName(tensor.scalar_type());
    node["device"] = tensor.device().str();
    node["requires_grad"] = tensor.requires_grad();
    return node;
  }
  if (value.isNone()) return Json{{"kind", "none"}};
  if (value.isTuple()) {
    std::vector<Json> items;
    for (const c10::IValue& item : value.toTupleRef().elements()) {
      items.push_back(DescribeValue(item));
    }
    return Items("tuple", items);
  }
  if (value.isList()) {
    std::vector<Json> items;
    for (const c10::IValue& item : value.toListRef())
      items.push_back(DescribeValue(item));
    return Items("list", items);
  }
  if (value.isGenericDict()) {
    Json node = Json::object();
    node["kind"] = "mapping";
    node["type"] = "dict";
    node["items"] = Json::array();
    for (const auto& entry : value.toGenericDict()) {
      Json item = Json::object();
      const c10::IValue& key = entry.key();
      if (key.isInt() || key.isBool()) {
        item["key"] = key.isBool() ? Json(key.toBool()) : Json(key.toInt());
      } else if (key.isString() && IsIdentifier(key.toStringRef())) {
        item["key"] = key.toStringRef();
      }
      item["key_type"] = KeyType(key);
      item["value"] = DescribeValue(entry.value());
      node["items"].push_back(std::move(item));
    }
    return node;
  }
  if (value.isBool()) return Scalar("bool");
  if (value.isInt() || value.isSymInt()) return Scalar("int");
  if (value.isDouble() || value.isSymFloat()) return Scalar("float");
  if (value.isComplexDouble()) return Scalar("complex");
  if (value.isString()) return Scalar("str");
  Json node = Json::object();
  node["kind"] = "object";
  if (value.isObject()) {
    node["type"] =
        ShortClassName(value.toObjectRef().type()->name()->qualifiedName());
  } else if (value.isDevice()) {
    node["type"] = "device";
  } else {
    node["type"] = value.tagKind();
  }
  return node;
}

Json DescribeCall(const std::vector<c10::IValue>& args) {
  Json call = Json::object();
  call["args"] = Json::array();
  for (const c10::IValue& arg : args)
    call["args"].push_back(DescribeValue(arg));
  call["kwargs"] = Json::object();
  return call;
}

}  // namespace torchscan
