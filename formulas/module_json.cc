#include "formulas/module_json.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "formulas/module_families.h"
#include "formulas/module_params_json.h"
#include "report/json_reader.h"

namespace torchscan::formulas {
namespace {

using report::Json;
using report::JsonArray;
using report::JsonObject;
using report::JsonValue;

constexpr absl::string_view kValueKinds =
    "tensor, none, tuple, list, mapping, scalar or object";

absl::StatusOr<CallValue> ReadValue(const JsonValue& node);

absl::StatusOr<std::vector<CallValue>> ReadValueArray(const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(JsonArray items, node.Array());
  std::vector<CallValue> values;
  for (std::size_t i = 0; i < items.size(); ++i) {
    TS_ASSIGN_OR_RETURN(CallValue value, ReadValue(items.Item(i)));
    values.push_back(std::move(value));
  }
  return values;
}

absl::StatusOr<CallValue> ReadValue(const JsonValue& node) {
  TS_ASSIGN_OR_RETURN(JsonObject object, node.Object());
  TS_ASSIGN_OR_RETURN(std::string kind, object.String("kind"));
  CallValue value;
  if (kind == "tensor") {
    TS_ASSIGN_OR_RETURN(JsonValue shape, object.Member("shape"));
    TS_ASSIGN_OR_RETURN(Dims dims,
                        params_json::IntArray(shape, /*non_negative=*/true));
    value = CallValue::Tensor(std::move(dims));
    // Metadata the formulas do not read.
    if (object.Contains("dtype"))
      TS_RETURN_IF_ERROR(object.String("dtype").status());
    if (object.Contains("device"))
      TS_RETURN_IF_ERROR(object.String("device").status());
    if (object.Contains("requires_grad")) {
      TS_RETURN_IF_ERROR(object.Bool("requires_grad").status());
    }
  } else if (kind == "none") {
    value = CallValue::None();
  } else if (kind == "tuple" || kind == "list") {
    TS_ASSIGN_OR_RETURN(JsonValue items_node, object.Member("items"));
    TS_ASSIGN_OR_RETURN(std::vector<CallValue> items,
                        ReadValueArray(items_node));
    value = kind == "tuple" ? CallValue::Tuple(std::move(items))
                            : CallValue::List(std::move(items));
    if (object.Contains("type")) {
      TS_ASSIGN_OR_RETURN(value.type, object.String("type"));
    }
  } else if (kind == "mapping") {
    TS_ASSIGN_OR_RETURN(std::string type, object.String("type"));
    TS_ASSIGN_OR_RETURN(JsonArray items, object.Array("items"));
    std::vector<CallValue> values;
    for (std::size_t i = 0; i < items.size(); ++i) {
      TS_ASSIGN_OR_RETURN(JsonObject item, items.Item(i).Object());
      item.OptionalMember("key");  // absent for keys that are not identifiers
      TS_RETURN_IF_ERROR(item.String("key_type").status());
      TS_ASSIGN_OR_RETURN(JsonValue entry, item.Member("value"));
      TS_ASSIGN_OR_RETURN(CallValue entry_value, ReadValue(entry));
      values.push_back(std::move(entry_value));
      TS_RETURN_IF_ERROR(item.RejectUnreadKeys());
    }
    value = CallValue::Mapping(std::move(type), std::move(values));
  } else if (kind == "scalar") {
    TS_ASSIGN_OR_RETURN(std::string type, object.String("type"));
    value = CallValue::Scalar(std::move(type));
  } else if (kind == "object") {
    TS_ASSIGN_OR_RETURN(std::string type, object.String("type"));
    value = CallValue::Object(std::move(type));
  } else {
    return report::FieldError(object.PathOf("kind"),
                              absl::StrCat("unknown value kind '", kind,
                                           "' (expected ", kValueKinds, ")"));
  }
  TS_RETURN_IF_ERROR(object.RejectUnreadKeys());
  return value;
}

std::string FamilyNames() {
  std::vector<absl::string_view> names;
  for (int i = 0; i <= static_cast<int>(ModuleFamily::kTransformer); ++i) {
    names.push_back(ModuleFamilyName(static_cast<ModuleFamily>(i)));
  }
  return absl::StrJoin(names, ", ");
}

}  // namespace

absl::StatusOr<ModuleDescription> ModuleDescriptionFromJson(
    const Json& node, absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject object,
                      JsonValue(node, std::string(field)).Object());
  ModuleDescription module;
  TS_ASSIGN_OR_RETURN(module.type, object.String("type"));
  TS_ASSIGN_OR_RETURN(std::string family_name, object.String("family"));
  std::optional<ModuleFamily> family = ParseModuleFamily(family_name);
  if (!family) {
    return report::FieldError(
        object.PathOf("family"),
        absl::StrCat("unknown family '", family_name, "' (expected one of ",
                     FamilyNames(), ")"));
  }
  module.family = *family;
  TS_ASSIGN_OR_RETURN(JsonValue count, object.Member("parameter_count"));
  if (!report::IsJsonInteger(count.node())) return count.Expected("an integer");
  TS_ASSIGN_OR_RETURN(module.parameter_count, count.Integer());
  if (module.parameter_count < 0) return count.Error("must not be negative");
  if (ParamsReader read = ModuleFamilyRowFor(module.family).read_params) {
    TS_ASSIGN_OR_RETURN(module.params, read(object));
  }
  TS_RETURN_IF_ERROR(object.RejectUnreadKeys());
  if (absl::Status status = ValidateModuleDescription(module); !status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", status.message()));
  }
  return module;
}

absl::StatusOr<CallValue> CallValueFromJson(const Json& node,
                                            absl::string_view field) {
  return ReadValue(JsonValue(node, std::string(field)));
}

absl::StatusOr<ModuleCall> ModuleCallFromJson(const Json& node,
                                              absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject object,
                      JsonValue(node, std::string(field)).Object());
  ModuleCall call;
  TS_ASSIGN_OR_RETURN(JsonValue inputs, object.Member("inputs"));
  TS_ASSIGN_OR_RETURN(call.inputs, ReadValueArray(inputs));
  TS_ASSIGN_OR_RETURN(JsonValue output, object.Member("output"));
  TS_ASSIGN_OR_RETURN(call.output, ReadValue(output));
  TS_RETURN_IF_ERROR(object.RejectUnreadKeys());
  return call;
}

absl::StatusOr<CapturedModuleCall> CapturedModuleCallFromJson(
    const Json& node, absl::string_view field) {
  TS_ASSIGN_OR_RETURN(JsonObject object,
                      JsonValue(node, std::string(field)).Object());
  CapturedModuleCall captured;
  TS_ASSIGN_OR_RETURN(captured.path, object.String("path"));
  TS_ASSIGN_OR_RETURN(JsonValue module, object.Member("module"));
  TS_ASSIGN_OR_RETURN(JsonValue call, object.Member("call"));
  TS_RETURN_IF_ERROR(object.RejectUnreadKeys());
  TS_ASSIGN_OR_RETURN(captured.module,
                      ModuleDescriptionFromJson(module.node(), module.path()));
  TS_ASSIGN_OR_RETURN(captured.call,
                      ModuleCallFromJson(call.node(), call.path()));
  return captured;
}

}  // namespace torchscan::formulas
