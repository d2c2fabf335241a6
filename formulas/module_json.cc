#include "formulas/module_json.h"

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "formulas/module_families.h"

namespace torchscan::report {
namespace {

using formulas::CallValue;
using formulas::ModuleDescription;
using formulas::ModuleFamily;

constexpr absl::string_view kValueKinds =
    "tensor, none, tuple, list, mapping, scalar or object";

std::string FamilyNames() {
  std::vector<absl::string_view> names;
  for (int i = 0; i <= static_cast<int>(ModuleFamily::kTransformer); ++i) {
    names.push_back(formulas::ModuleFamilyName(static_cast<ModuleFamily>(i)));
  }
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<ModuleFamily> ReadFamily(const JsonObject& object) {
  TS_ASSIGN_OR_RETURN(std::string name, object.String("family"));
  std::optional<ModuleFamily> family = formulas::ParseModuleFamily(name);
  if (!family) {
    return FieldError(object.PathOf("family"),
                      absl::StrCat("unknown family '", name,
                                   "' (expected one of ", FamilyNames(), ")"));
  }
  return *family;
}

// A JSON integer ("expected an integer" for 2.0 too), not negative.
absl::StatusOr<Count> ReadParameterCount(const JsonObject& object) {
  TS_ASSIGN_OR_RETURN(JsonValue count, object.Member("parameter_count"));
  if (!IsJsonInteger(count.node())) return count.Expected("an integer");
  TS_ASSIGN_OR_RETURN(Count value, count.Integer());
  if (value < 0) return count.Error("must not be negative");
  return value;
}

// A mapping's values: [{"key": any (absent for keys that are not
// identifiers), "key_type": str, "value": value}, ...].
absl::StatusOr<std::vector<CallValue>> ReadMappingValues(
    const JsonObject& object) {
  TS_ASSIGN_OR_RETURN(JsonArray items, object.Array("items"));
  std::vector<CallValue> values;
  values.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    TS_ASSIGN_OR_RETURN(JsonObject item, items.Item(i).Object());
    item.OptionalMember("key");
    TS_RETURN_IF_ERROR(item.String("key_type").status());
    TS_ASSIGN_OR_RETURN(JsonValue entry, item.Member("value"));
    TS_ASSIGN_OR_RETURN(CallValue value, FromJson<CallValue>(entry));
    values.push_back(std::move(value));
    TS_RETURN_IF_ERROR(item.RejectUnreadKeys());
  }
  return values;
}

// The value of kind `kind` read from `object`, but for its unread keys.
absl::StatusOr<CallValue> ReadValueOfKind(const JsonObject& object,
                                          absl::string_view kind) {
  if (kind == "tensor") {
    TS_ASSIGN_OR_RETURN(JsonValue shape, object.Member("shape"));
    TS_ASSIGN_OR_RETURN(formulas::Dims dims,
                        formulas::IntArrayCodec<true>::Read(shape));
    // Metadata the formulas do not read.
    for (absl::string_view key : {"dtype", "device"}) {
      if (object.Contains(key)) TS_RETURN_IF_ERROR(object.String(key).status());
    }
    if (object.Contains("requires_grad")) {
      TS_RETURN_IF_ERROR(object.Bool("requires_grad").status());
    }
    return CallValue::Tensor(std::move(dims));
  }
  if (kind == "none") return CallValue::None();
  if (kind == "tuple" || kind == "list") {
    TS_ASSIGN_OR_RETURN(JsonValue items_node, object.Member("items"));
    TS_ASSIGN_OR_RETURN(std::vector<CallValue> items,
                        FromJson<std::vector<CallValue>>(items_node));
    CallValue value = kind == "tuple" ? CallValue::Tuple(std::move(items))
                                      : CallValue::List(std::move(items));
    if (object.Contains("type")) {
      TS_ASSIGN_OR_RETURN(value.type, object.String("type"));
    }
    return value;
  }
  if (kind == "mapping") {
    TS_ASSIGN_OR_RETURN(std::string type, object.String("type"));
    TS_ASSIGN_OR_RETURN(std::vector<CallValue> values,
                        ReadMappingValues(object));
    return CallValue::Mapping(std::move(type), std::move(values));
  }
  if (kind == "scalar" || kind == "object") {
    TS_ASSIGN_OR_RETURN(std::string type, object.String("type"));
    return kind == "scalar" ? CallValue::Scalar(std::move(type))
                            : CallValue::Object(std::move(type));
  }
  return FieldError(object.PathOf("kind"),
                    absl::StrCat("unknown value kind '", kind, "' (expected ",
                                 kValueKinds, ")"));
}

absl::string_view KindName(CallValue::Kind kind) {
  switch (kind) {
    case CallValue::Kind::kTensor:
      return "tensor";
    case CallValue::Kind::kNone:
      return "none";
    case CallValue::Kind::kTuple:
      return "tuple";
    case CallValue::Kind::kList:
      return "list";
    case CallValue::Kind::kMapping:
      return "mapping";
    case CallValue::Kind::kScalar:
      return "scalar";
    case CallValue::Kind::kObject:
      return "object";
  }
  return "none";
}

}  // namespace

Json JsonCodec<ModuleDescription>::Write(const ModuleDescription& module) {
  Json object = Json::object();
  object["type"] = module.type;
  object["family"] = std::string(formulas::ModuleFamilyName(module.family));
  object["parameter_count"] = CountToJson(module.parameter_count);
  std::visit(
      [&](const auto& params) {
        using Params = std::decay_t<decltype(params)>;
        if constexpr (!std::is_same_v<Params, std::monostate>) {
          WriteFieldsIn(params, object);
        }
      },
      module.params);
  return object;
}

absl::StatusOr<ModuleDescription> JsonCodec<ModuleDescription>::Read(
    const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
  ModuleDescription module;
  TS_ASSIGN_OR_RETURN(module.type, object.String("type"));
  TS_ASSIGN_OR_RETURN(module.family, ReadFamily(object));
  TS_ASSIGN_OR_RETURN(module.parameter_count, ReadParameterCount(object));
  // The family's params struct, read by its table in this object
  // (report::ReadFieldsIn): the keys it reads are marked read.
  if (formulas::ParamsReader read =
          formulas::ModuleFamilyRowFor(module.family).read_params) {
    TS_ASSIGN_OR_RETURN(module.params, read(object));
  }
  TS_RETURN_IF_ERROR(object.RejectUnreadKeys());
  if (absl::Status status = formulas::ValidateModuleDescription(module);
      !status.ok()) {
    return node.Error(status.message());
  }
  return module;
}

Json JsonCodec<CallValue>::Write(const CallValue& value) {
  Json object = Json::object();
  object["kind"] = std::string(KindName(value.kind));
  switch (value.kind) {
    case CallValue::Kind::kTensor:
      object["shape"] = value.shape;
      break;
    case CallValue::Kind::kNone:
      break;
    case CallValue::Kind::kTuple:
    case CallValue::Kind::kList:
      object["items"] = ToJson(value.items);
      if (!value.type.empty()) object["type"] = value.type;
      break;
    case CallValue::Kind::kMapping:
      object["type"] = value.type;
      object["items"] = Json::array();
      for (const CallValue& item : value.items) {
        object["items"].push_back(
            Json{{"key_type", "object"}, {"value", ToJson(item)}});
      }
      break;
    case CallValue::Kind::kScalar:
    case CallValue::Kind::kObject:
      object["type"] = value.type;
      break;
  }
  return object;
}

absl::StatusOr<CallValue> JsonCodec<CallValue>::Read(const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
  TS_ASSIGN_OR_RETURN(std::string kind, object.String("kind"));
  TS_ASSIGN_OR_RETURN(CallValue value, ReadValueOfKind(object, kind));
  TS_RETURN_IF_ERROR(object.RejectUnreadKeys());
  return value;
}

}  // namespace torchscan::report
