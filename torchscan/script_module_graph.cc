#include "torchscan/script_module_graph.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <variant>
#include <vector>

#include "formulas/module_families.h"

namespace torchscan {
namespace {

using crawl::GraphValue;
using crawl::TensorValue;
using crawl::UnknownValue;

// A tensor by its sizes; None for an undefined one (a module's `bias =
// None` is an undefined tensor attribute).
GraphValue TensorOf(const at::Tensor& tensor) {
  if (!tensor.defined()) return GraphValue();
  return TensorValue{tensor.sizes().vec()};
}

// A constant or an attribute's value in the recovery's words.
GraphValue FromIValue(const c10::IValue& value) {
  if (value.isNone()) return GraphValue();
  if (value.isBool()) return value.toBool();
  if (value.isInt()) return value.toInt();
  if (value.isDouble()) return value.toDouble();
  if (value.isString()) return value.toStringRef();
  if (value.isIntList()) return value.toIntVector();
  if (value.isTensor()) return TensorOf(value.toTensor());
  return UnknownValue{};
}

// The module attribute `value` reads, when it is a `prim::GetAttr` chain
// from the graph's first input (the module itself).
std::optional<c10::IValue> ModuleAttribute(const torch::jit::Module& module,
                                           const torch::jit::Value* value,
                                           const torch::jit::Value* self) {
  std::vector<std::string> names;
  while (value != self) {
    const torch::jit::Node* node = value->node();
    if (node->kind() != c10::prim::GetAttr) return std::nullopt;
    names.push_back(node->s(c10::attr::name));
    value = node->input(0);
  }
  c10::IValue current = module._ivalue();
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    if (!current.isObject()) return std::nullopt;
    const c10::intrusive_ptr<c10::ivalue::Object> object = current.toObject();
    const std::optional<std::size_t> slot =
        object->type()->findAttributeSlot(*it);
    if (!slot) return std::nullopt;
    current = object->getSlot(*slot);
  }
  return current;
}

// An operator's argument: a constant, a list built from int constants, an
// attribute of the module, a tensor the graph computes, or unknown.
GraphValue ArgumentOf(const torch::jit::Module& module,
                      const torch::jit::Value* value,
                      const torch::jit::Value* self) {
  if (std::optional<c10::IValue> constant = torch::jit::toIValue(value)) {
    return FromIValue(*constant);
  }
  if (value->node()->kind() == c10::prim::ListConstruct) {
    std::vector<std::int64_t> items;
    for (const torch::jit::Value* item : value->node()->inputs()) {
      std::optional<c10::IValue> element = torch::jit::toIValue(item);
      if (!element || !element->isInt()) return UnknownValue{};
      items.push_back(element->toInt());
    }
    return items;
  }
  if (std::optional<c10::IValue> attribute =
          ModuleAttribute(module, value, self)) {
    return FromIValue(*attribute);
  }
  if (value->type()->cast<c10::TensorType>()) return TensorValue{};
  return UnknownValue{};
}

void CollectOperators(const torch::jit::Module& module,
                      torch::jit::Block* block, const torch::jit::Value* self,
                      std::vector<crawl::GraphOperator>& out) {
  for (torch::jit::Node* node : block->nodes()) {
    if (const c10::FunctionSchema* schema = node->maybeSchema()) {
      crawl::GraphOperator op{node->kind().toQualString(), {}};
      const auto& arguments = schema->arguments();
      for (std::size_t i = 0; i < arguments.size() && i < node->inputs().size();
           ++i) {
        op.arguments.emplace_back(arguments[i].name(),
                                  ArgumentOf(module, node->inputs()[i], self));
      }
      out.push_back(std::move(op));
    }
    for (torch::jit::Block* inner : node->blocks()) {
      CollectOperators(module, inner, self, out);
    }
  }
}

c10::IValue ToIValue(const GraphValue& value) {
  struct Converter {
    c10::IValue operator()(std::monostate) const { return c10::IValue(); }
    c10::IValue operator()(bool truth) const { return truth; }
    c10::IValue operator()(std::int64_t integer) const { return integer; }
    c10::IValue operator()(double number) const { return number; }
    c10::IValue operator()(const std::string& text) const { return text; }
    c10::IValue operator()(const std::vector<std::int64_t>& ints) const {
      return c10::List<std::int64_t>(ints);
    }
    // Never recovered values (crawl::RecoverAttributes).
    c10::IValue operator()(const TensorValue&) const { return c10::IValue(); }
    c10::IValue operator()(const UnknownValue&) const { return c10::IValue(); }
  };
  return std::visit(Converter{}, value);
}

}  // namespace

crawl::ModuleGraph ScriptModuleGraph(const torch::jit::Module& module,
                                     formulas::ModuleFamily family) {
  crawl::ModuleGraph graph{.family = family};
  if (std::optional<torch::jit::Method> forward =
          module.find_method("forward")) {
    const std::shared_ptr<torch::jit::Graph>& code = forward->graph();
    const torch::jit::Value* self =
        code->inputs().empty() ? nullptr : code->inputs()[0];
    CollectOperators(module, code->block(), self, graph.operators);
  }
  for (const auto& parameter : module.named_parameters(/*recurse=*/true)) {
    if (parameter.value.defined()) {
      graph.tensors[parameter.name] = parameter.value.sizes().vec();
    }
  }
  for (const auto& buffer : module.named_buffers(/*recurse=*/false)) {
    if (buffer.value.defined()) {
      graph.tensors[buffer.name] = buffer.value.sizes().vec();
    }
  }
  return graph;
}

std::map<std::string, c10::IValue> RecoverScriptAttributes(
    const torch::jit::Module& module, formulas::ModuleFamily family) {
  // The recovery keys its values as a description does; a script module's
  // readers ask by torch's attribute names (formulas::ModuleAttribute).
  std::map<std::string, const char*> names;
  for (const formulas::ModuleAttribute& attribute :
       formulas::Listed(formulas::ModuleFamilyRowFor(family).attributes)) {
    names.emplace(attribute.key, attribute.name);
  }
  const crawl::RecoveredAttributes graph_shows =
      crawl::RecoverAttributes(ScriptModuleGraph(module, family));
  const std::set<std::string> unrecovered(graph_shows.unrecovered.begin(),
                                          graph_shows.unrecovered.end());
  std::map<std::string, c10::IValue> recovered;
  for (const auto& [key, value] : graph_shows.values) {
    auto it = names.find(key);
    if (it == names.end() || unrecovered.contains(key)) continue;
    recovered.emplace(it->second, ToIValue(value));
  }
  return recovered;
}

}  // namespace torchscan
