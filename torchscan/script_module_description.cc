#include "torchscan/script_module_description.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "formulas/module_families.h"
#include "torchscan/ivalue_metadata.h"
#include "torchscan/script_module_graph.h"
#include "torchscan/tensor_identity.h"

namespace torchscan {
namespace {

using formulas::AttributeKind;
using formulas::AttributeValue;
using formulas::HyperParameter;
using formulas::ModuleAttribute;
using formulas::ModuleFamily;
using formulas::ModuleFamilyRow;
using formulas::ModuleFamilyRowFor;
using formulas::ModuleParams;

// One module's constants (`__constants__`) and attributes, read by name.
class Attributes {
 public:
  Attributes(const torch::jit::Module& module, ModuleFamily family)
      : module_(module),
        family_(family),
        type_(ShortClassName(module.type()->name()->qualifiedName())) {}

  // The constant or attribute `name`; else what the module's graph shows
  // of it (a traced module keeps no attributes: script_module_graph.h);
  // else None.
  c10::IValue Get(const std::string& name) const {
    if (std::optional<c10::IValue> constant =
            module_.type()->findConstant(name)) {
      return *constant;
    }
    if (module_.hasattr(name)) return module_.attr(name);
    if (auto it = Recovered().find(name); it != Recovered().end()) {
      return it->second;
    }
    return c10::IValue();
  }

  // Whether the module or its graph holds `name` at all: None is a value
  // (a BatchNorm's momentum, a missing weight), and only a held None is.
  bool Holds(const std::string& name) const {
    return module_.type()->findConstant(name).has_value() ||
           module_.hasattr(name) || Recovered().contains(name);
  }

  // An attribute neither the module nor its graph holds.
  absl::Status Missing(const std::string& name, absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(type_, ".", name, ": expected ", what, ", got nothing"));
  }

  absl::Status Expected(const std::string& name, absl::string_view what,
                        const c10::IValue& got) const {
    return absl::InvalidArgumentError(absl::StrCat(
        type_, ".", name, ": expected ", what, ", got ", got.tagKind()));
  }

  absl::StatusOr<std::int64_t> Int(const std::string& name) const {
    const c10::IValue value = Get(name);
    if (!value.isInt()) return Expected(name, "an int", value);
    return value.toInt();
  }

  absl::StatusOr<bool> Bool(const std::string& name) const {
    const c10::IValue value = Get(name);
    if (!value.isBool()) return Expected(name, "a bool", value);
    return value.toBool();
  }

  absl::StatusOr<double> Number(const std::string& name) const {
    const c10::IValue value = Get(name);
    if (value.isDouble()) return value.toDouble();
    if (value.isInt()) return static_cast<double>(value.toInt());
    return Expected(name, "a number", value);
  }

  // A number, or nullopt for None (BatchNorm's momentum).
  absl::StatusOr<std::optional<double>> NumberOrNone(
      const std::string& name) const {
    if (!Holds(name)) return Missing(name, "a number or None");
    const c10::IValue value = Get(name);
    if (value.isDouble()) return value.toDouble();
    if (value.isInt()) return static_cast<double>(value.toInt());
    return std::optional<double>();
  }

  absl::StatusOr<std::vector<std::int64_t>> Ints(
      const std::string& name) const {
    const c10::IValue value = Get(name);
    if (!value.isTuple() && !value.isList()) {
      return Expected(name, "a tuple of ints", value);
    }
    std::vector<std::int64_t> ints;
    for (const c10::IValue& item : value.isTuple()
                                       ? value.toTupleRef().elements().vec()
                                       : value.toListRef().vec()) {
      if (!item.isInt()) return Expected(name, "a tuple of ints", value);
      ints.push_back(item.toInt());
    }
    return ints;
  }

  // An int, a tuple of ints or a string, as stored.
  absl::StatusOr<HyperParameter> Hyper(const std::string& name) const {
    const c10::IValue value = Get(name);
    if (value.isInt()) return HyperParameter::Int(value.toInt());
    if (value.isString()) return HyperParameter::String(value.toStringRef());
    TS_ASSIGN_OR_RETURN(std::vector<std::int64_t> ints, Ints(name));
    return HyperParameter::Tuple(std::move(ints));
  }

  // The same, or nullopt when the module has no such attribute.
  absl::StatusOr<std::optional<HyperParameter>> OptionalHyper(
      const std::string& name) const {
    if (Get(name).isNone()) return std::optional<HyperParameter>();
    TS_ASSIGN_OR_RETURN(HyperParameter value, Hyper(name));
    return std::optional<HyperParameter>(std::move(value));
  }

  // Whether the tensor attribute `name` is set (`module.bias is not None`);
  // the graph recovery answers with a bool.
  bool HasTensor(const std::string& name) const {
    const c10::IValue value = Get(name);
    if (value.isBool()) return value.toBool();
    return value.isTensor() && value.toTensor().defined();
  }

  // numel of the tensor attribute `name`, or nullopt for None.
  absl::StatusOr<std::optional<std::int64_t>> TensorNumel(
      const std::string& name) const {
    if (!Holds(name)) return Missing(name, "a tensor or None");
    const c10::IValue value = Get(name);
    if (value.isInt()) return value.toInt();  // recovered from the graph
    if (!value.isTensor() || !value.toTensor().defined()) {
      return std::optional<std::int64_t>();
    }
    return value.toTensor().numel();
  }

 private:
  const torch::jit::Module& module_;
  ModuleFamily family_;
  std::string type_;
  // What the module's graph shows, computed on the first attribute the
  // module lacks.
  const std::map<std::string, c10::IValue>& Recovered() const {
    if (!recovered_) recovered_ = RecoverScriptAttributes(module_, family_);
    return *recovered_;
  }
  mutable std::optional<std::map<std::string, c10::IValue>> recovered_;
};

absl::StatusOr<ModuleParams> ReadParams(const ModuleFamilyRow& row,
                                        const torch::jit::Module& module);

// The attribute as its kind reads it (module_families.h's AttributeKind),
// in the words of a script module's values: None for an absent tensor.
absl::StatusOr<AttributeValue> ReadAttribute(const Attributes& attributes,
                                             const ModuleAttribute& attribute) {
  const std::string name = attribute.name;
  switch (attribute.kind) {
    case AttributeKind::kInt:
      return attributes.Int(name);
    case AttributeKind::kTruth:
      return attributes.Bool(name);
    case AttributeKind::kIsNotNone:
    case AttributeKind::kSetAndNotNone:
      return attributes.HasTensor(name);
    case AttributeKind::kNumber:
      return attributes.Number(name);
    case AttributeKind::kNumberOrNone:
      return attributes.NumberOrNone(name);
    case AttributeKind::kNumelOrNone:
      return attributes.TensorNumel(name);
    case AttributeKind::kHyper:
    case AttributeKind::kHyperOrString:
      return attributes.Hyper(name);
    case AttributeKind::kHyperIfPresent:
      return attributes.OptionalHyper(name);
    case AttributeKind::kIntTuple:
      return attributes.Ints(name);
    case AttributeKind::kLinear: {
      const c10::IValue submodule = attributes.Get(name);
      if (!submodule.isModule()) {
        return attributes.Expected(name, "a module", submodule);
      }
      TS_ASSIGN_OR_RETURN(ModuleParams linear,
                          ReadParams(ModuleFamilyRowFor(ModuleFamily::kLinear),
                                     submodule.toModule()));
      return std::get<formulas::LinearParams>(std::move(linear));
    }
  }
  return absl::InternalError("unknown attribute kind");
}

// The row's hyper-parameters, read from the attributes it declares.
absl::StatusOr<ModuleParams> ReadParams(const ModuleFamilyRow& row,
                                        const torch::jit::Module& module) {
  const Attributes attributes(module, row.family);
  ModuleParams params;
  for (const ModuleAttribute& attribute : formulas::Listed(row.attributes)) {
    TS_ASSIGN_OR_RETURN(AttributeValue value,
                        ReadAttribute(attributes, attribute));
    attribute.store(params, std::move(value));
  }
  return params;
}

// The family of each class a script module's type may name (NOTE
// [TorchScript keeps no base classes] in module_families.h).
const absl::flat_hash_map<std::string, ModuleFamily>& FamiliesByClass() {
  static const auto* const families = [] {
    auto* by_class = new absl::flat_hash_map<std::string, ModuleFamily>;
    for (const ModuleFamilyRow& row : formulas::ModuleFamilyRows()) {
      if (row.torch_class == nullptr || !DescribedByAttributes(row)) continue;
      by_class->emplace(row.torch_class, row.family);
      for (const char* subclass : formulas::Listed(row.script_classes)) {
        by_class->emplace(subclass, row.family);
      }
    }
    return by_class;
  }();
  return *families;
}

}  // namespace

absl::StatusOr<formulas::ModuleDescription> DescribeScriptModule(
    const torch::jit::Module& module) {
  const std::string qualified = module.type()->name()->qualifiedName();
  formulas::ModuleDescription description;
  description.type = ShortClassName(qualified);
  auto it = FamiliesByClass().find(DemangledClassName(qualified));
  if (it != FamiliesByClass().end()) {
    description.family = it->second;
    TS_ASSIGN_OR_RETURN(description.params,
                        ReadParams(ModuleFamilyRowFor(it->second), module));
  }
  std::int64_t parameter_count = 0;
  SeenTensors seen;
  for (const auto& parameter : module.named_parameters(/*recurse=*/true)) {
    if (seen.Insert(parameter.value)) {
      parameter_count += parameter.value.numel();
    }
  }
  description.parameter_count = parameter_count;
  return description;
}

}  // namespace torchscan
