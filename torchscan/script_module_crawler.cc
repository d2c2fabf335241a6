// crawl_module for TorchScript modules.
//
// TorchScript has no forward hooks for a loaded module, but its method graphs
// call submodules with explicit prim::CallMethod["forward"] nodes. The crawl
// instruments a clone of the module (sharing its parameters): around every
// such call it inserts two side-effecting operators,
// torchscan::_script_module_enter(module, inputs) and
// torchscan::_script_module_exit(module, output), which the interpreter keeps
// through inlining and optimization. They report each submodule call with its
// actual values, exactly where Python's forward pre- and post-hooks would
// run, so layers, call indices, shapes and module formulas come out as in
// Python, and the counter attributes every operator to the open layer calls.

#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/library.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "crawl/crawl_record.h"
#include "formulas/module_call.h"
#include "report/layer_report.h"
#include "report/metric_result.h"
#include "torchscan/crawl.h"
#include "torchscan/crawl_support.h"
#include "torchscan/ivalue_metadata.h"
#include "torchscan/layer_call_flops.h"
#include "torchscan/script_module_description.h"
#include "torchscan/tensor_identity.h"
#include "torchscan_dispatch/active_counting.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/own_operators.h"

namespace torchscan {
namespace {

constexpr char kEnterOperator[] = "torchscan::_script_module_enter";
constexpr char kExitOperator[] = "torchscan::_script_module_exit";

// NOTE [Overloaded forward methods]
// A module that declares forward overloads (torch.jit._overload_method, as
// torchvision's DenseNet layers do) has no method named "forward": the
// compiler emits one method per overload, "forward__0", "forward__1", ...,
// and its callers call those. Each is the module's forward.
bool IsForwardMethod(absl::string_view name) {
  if (name == "forward") return true;
  if (!absl::ConsumePrefix(&name, "forward__") || name.empty()) return false;
  return std::all_of(name.begin(), name.end(), absl::ascii_isdigit);
}

// Inserts the enter/exit operators around every submodule forward call in
// `block` (and the blocks nested in it: loops, conditionals).
void InstrumentBlock(torch::jit::Block* block) {
  for (torch::jit::Node* node : block->nodes()) {
    for (torch::jit::Block* nested : node->blocks()) InstrumentBlock(nested);
    if (node->kind() != c10::prim::CallMethod ||
        !IsForwardMethod(node->s(c10::attr::name))) {
      continue;
    }
    torch::jit::Value* callee = node->inputs()[0];
    const auto callee_type = callee->type()->cast<c10::ClassType>();
    if (callee_type == nullptr || !callee_type->is_module()) continue;
    torch::jit::Graph* graph = node->owningGraph();
    {
      torch::jit::WithInsertPoint before(node);
      std::vector<torch::jit::Value*> inputs(node->inputs().begin() + 1,
                                             node->inputs().end());
      torch::jit::Value* tuple =
          graph->insertNode(graph->createTuple(inputs))->output();
      graph->insertNode(graph->create(
          c10::Symbol::fromQualString(kEnterOperator), {callee, tuple}, 0));
    }
    {
      torch::jit::WithInsertPoint after(node->next());
      torch::jit::Value* output =
          node->outputs().size() == 1
              ? node->output()
              : graph->insertNode(graph->createTuple(node->outputs()))
                    ->output();
      graph->insertNode(graph->create(
          c10::Symbol::fromQualString(kExitOperator), {callee, output}, 0));
    }
  }
}

void Instrument(const torch::jit::Module& root) {
  std::unordered_set<const c10::ClassType*> done;
  for (const auto& named : root.named_modules()) {
    const c10::ClassTypePtr type = named.value.type();
    if (!done.insert(type.get()).second) continue;
    for (torch::jit::Function* method : type->methods()) {
      if (torch::jit::GraphFunction* graph =
              torch::jit::tryToGraphFunction(*method)) {
        InstrumentBlock(graph->graph()->block());
      }
    }
  }
}

// One crawl in progress: the hooks' state.
class ScriptCrawl {
 public:
  ScriptCrawl(const torch::jit::Module& root, bool full,
              dispatch::CountingSession* session)
      : root_(root), full_(full), session_(session) {
    root_label_ = ShortClassName(root.type()->name()->qualifiedName());
    for (const auto& named : root.named_modules()) {
      paths_.try_emplace(named.value._ivalue().get(), named.name);
    }
    transformer_root_ =
        DemangledClassName(root.type()->name()->qualifiedName()) ==
        "torch.nn.modules.transformer.Transformer";
  }

  static ScriptCrawl*& Active() {
    thread_local ScriptCrawl* active = nullptr;
    return active;
  }

  void Enter(const torch::jit::Module& module,
             const std::vector<c10::IValue>& inputs) {
    auto path = paths_.find(module._ivalue().get());
    // Only the root is hooked under a Transformer root, as in Python.
    if (path == paths_.end() || (transformer_root_ && !path->second.empty())) {
      unobserved_.push_back(true);
      return;
    }
    unobserved_.push_back(false);
    const bool mha = IsMultiheadAttention(module);
    const bool recurse = mha || (transformer_root_ && path->second.empty());
    std::vector<at::Tensor> parameters, buffers;
    for (const auto& parameter : module.named_parameters(recurse)) {
      parameters.push_back(parameter.value);
    }
    for (const auto& buffer : module.named_buffers(recurse)) {
      buffers.push_back(buffer.value);
    }
    const std::string& path_name = path->second;
    report::LayerReport layer = NewLayerRecord(
        path_name, call_counts_[module._ivalue().get()]++,
        ShortClassName(module.type()->name()->qualifiedName()),
        DescribeCall(inputs), layer_tensors_.Parameters(parameters),
        layer_tensors_.Buffers(buffers));
    layer.metrics.Set(
        "calls",
        report::MetricResult::Complete(
            report::Count(1),
            report::MetricKind{"calls", std::string(report::kModuleCallScope),
                               std::string(report::kModuleHookMethod)}));
    layers_.push_back(std::move(layer));
    const std::size_t index = layers_.size() - 1;
    open_.push_back(OpenCall{index, module, inputs,
                             path_name.empty()
                                 ? root_label_
                                 : absl::StrCat(root_label_, ".", path_name)});
    if (session_ != nullptr) {
      session_->EnterLayer(std::to_string(index), open_.back().module_label);
    }
  }

  void Exit(const c10::IValue& output) {
    if (unobserved_.empty()) return;
    const bool unobserved = unobserved_.back();
    unobserved_.pop_back();
    if (unobserved || open_.empty()) return;
    OpenCall call = std::move(open_.back());
    open_.pop_back();
    if (session_ != nullptr) {
      session_->ExitLayer(std::to_string(call.layer), call.module_label);
    }
    layers_[call.layer].output = DescribeValue(output);
    if (!full_ || !IsMetricLeaf(call.module)) return;
    formulas::ModuleDescription description =
        DescribeLeaf(call.module, layers_[call.layer].path);
    formulas::ModuleCall module_call;
    for (const c10::IValue& input : call.inputs) {
      module_call.inputs.push_back(formulas::CallValueOf(DescribeValue(input)));
    }
    module_call.output = formulas::CallValueOf(DescribeValue(output));
    leaf_calls_.push_back(crawl::CapturedLeafCall{
        call.layer, formulas::CapturedModuleCall{layers_[call.layer].path,
                                                 std::move(description),
                                                 std::move(module_call)}});
  }

  std::vector<report::Diagnostic> TakeDiagnostics() {
    return std::exchange(diagnostics_, {});
  }
  std::vector<report::LayerReport> TakeLayers() {
    return std::exchange(layers_, {});
  }
  std::vector<crawl::CapturedLeafCall> TakeLeafCalls() {
    return std::exchange(leaf_calls_, {});
  }

 private:
  struct OpenCall {
    std::size_t layer;
    torch::jit::Module module;
    std::vector<c10::IValue> inputs;
    std::string module_label;
  };

  static bool IsMultiheadAttention(const torch::jit::Module& module) {
    return DemangledClassName(module.type()->name()->qualifiedName()) ==
           "torch.nn.modules.activation.MultiheadAttention";
  }

  // A leaf's description, with what tracing dropped recovered from its
  // graph (script_module_graph.h). A module still missing an attribute is a
  // layer with its parameters but no formulas, and one diagnostic names the
  // attribute: a report never fails for it.
  formulas::ModuleDescription DescribeLeaf(const torch::jit::Module& module,
                                           const std::string& path) {
    absl::StatusOr<formulas::ModuleDescription> description =
        DescribeScriptModule(module);
    if (description.ok()) return *std::move(description);
    formulas::ModuleDescription unsupported;
    unsupported.type = ShortClassName(module.type()->name()->qualifiedName());
    SeenTensors seen;
    for (const auto& parameter : module.named_parameters(/*recurse=*/true)) {
      if (seen.Insert(parameter.value)) {
        unsupported.parameter_count += parameter.value.numel();
      }
    }
    // "Conv2d.stride: expected a tuple of ints, got None"
    const std::pair<absl::string_view, absl::string_view> problem =
        absl::StrSplit(description.status().message(),
                       absl::MaxSplits(": ", 1));
    diagnostics_.push_back(report::Diagnostic::ForPath(
        "unrecovered_module_attribute", "module_flops", path,
        absl::StrCat(problem.first,
                     " is not kept by the TorchScript module nor recovered "
                     "from its graph (",
                     problem.second,
                     "), so its module formulas are not evaluated.")));
    return unsupported;
  }

  bool IsMetricLeaf(const torch::jit::Module& module) const {
    return module.children().size() == 0 || IsMultiheadAttention(module) ||
           (transformer_root_ && module._ivalue() == root_._ivalue());
  }

  const torch::jit::Module& root_;
  const bool full_;
  dispatch::CountingSession* session_;
  std::string root_label_;
  bool transformer_root_ = false;
  std::unordered_map<const void*, std::string> paths_;
  std::unordered_map<const void*, std::int64_t> call_counts_;
  LayerTensorCounter layer_tensors_;
  std::vector<OpenCall> open_;
  std::vector<bool> unobserved_;
  std::vector<report::LayerReport> layers_;
  std::vector<crawl::CapturedLeafCall> leaf_calls_;
  std::vector<report::Diagnostic> diagnostics_;
};

void EnterOperator(c10::IValue module, c10::IValue inputs) {
  if (ScriptCrawl* crawl = ScriptCrawl::Active()) {
    std::vector<c10::IValue> arguments = inputs.toTupleRef().elements().vec();
    crawl->Enter(torch::jit::Module(module.toObject()), arguments);
  }
}

void ExitOperator(c10::IValue module, c10::IValue output) {
  if (ScriptCrawl* crawl = ScriptCrawl::Active()) crawl->Exit(output);
}

// The hooks are bookkeeping, not workload operators: OwnOperators lets them
// pass the counting key untouched, and leaves them to the first copy when
// the library is loaded twice into one process (a static registration
// would abort the second load).
const dispatch::OwnOperators hook_operators(
    torch::Library::FRAGMENT, {"_script_module_enter", "_script_module_exit"},
    [](torch::Library& library) {
      library.def(
          torch::schema("_script_module_enter(Any module, Any inputs) -> ()",
                        c10::AliasAnalysisKind::CONSERVATIVE),
          &EnterOperator);
      library.def(
          torch::schema("_script_module_exit(Any module, Any output) -> ()",
                        c10::AliasAnalysisKind::CONSERVATIVE),
          &ExitOperator);
    },
    __FILE__, __LINE__);

// Makes `crawl` the active crawl of this thread for its lifetime.
class ActiveCrawl {
 public:
  explicit ActiveCrawl(ScriptCrawl* crawl) : previous_(ScriptCrawl::Active()) {
    ScriptCrawl::Active() = crawl;
  }
  ~ActiveCrawl() { ScriptCrawl::Active() = previous_; }

 private:
  ScriptCrawl* previous_;
};

std::vector<at::Tensor> Tensors(const torch::jit::named_parameter_list& list) {
  std::vector<at::Tensor> tensors;
  for (const auto& item : list) tensors.push_back(item.value);
  return tensors;
}

std::vector<at::Tensor> DefinedTensors(
    const torch::jit::named_buffer_list& list) {
  std::vector<at::Tensor> tensors;
  for (const auto& item : list) {
    if (item.value.defined()) tensors.push_back(item.value);
  }
  return tensors;
}

}  // namespace

absl::StatusOr<report::AnalysisReport> CrawlScriptModule(
    const torch::jit::Module& module, const CrawlOptions& options) {
  const std::vector<at::Tensor> parameters =
      Deduplicated(Tensors(module.named_parameters(/*recurse=*/true)));
  const std::vector<at::Tensor> buffers =
      Deduplicated(DefinedTensors(module.named_buffers(/*recurse=*/true)));
  TS_ASSIGN_OR_RETURN(PreparedInputs inputs,
                      PrepareInputs(options, parameters, buffers));
  if (!module.find_method("forward")) {
    return absl::InvalidArgumentError(
        "the TorchScript module has no forward method");
  }
  const bool full = options.mode == CrawlMode::kFull;
  const bool training_before = module.is_training();

  // The user's module is left as it is: the clone has its own (instrumented)
  // types and training flags, and shares the parameters.
  torch::jit::Module clone = module.clone(/*inplace=*/true);
  Instrument(clone);
  clone.eval();

  std::optional<dispatch::ActiveCounting> counting;
  if (full) counting.emplace();
  ScriptCrawl crawl(clone, full, full ? &counting->session() : nullptr);
  {
    ActiveCrawl active(&crawl);
    at::NoGradGuard no_grad;
    crawl.Enter(clone, inputs.args);
    c10::IValue output = clone.forward(inputs.args);
    crawl.Exit(output);
  }
  if (counting) counting->Stop();

  crawl::CrawlRecord record;
  record.parts.context =
      CrawlContext(DemangledClassName(module.type()->name()->qualifiedName()),
                   training_before, parameters, buffers);
  record.parts.inputs = std::move(inputs.metadata);
  record.parts.layers = crawl.TakeLayers();
  record.parts.model = ModelTotals(parameters, buffers);
  if (full) {
    record.leaf_calls = crawl.TakeLeafCalls();
    record.parts.module_diagnostics = crawl.TakeDiagnostics();
    TS_ASSIGN_OR_RETURN(record.operator_flops,
                        counting->session().BuildReport());
    // Enter labels each layer call with its layer's index (EnterLayer).
    TS_ASSIGN_OR_RETURN(auto layer_call_flops,
                        counting->session().BuildLayerCallFlops());
    record.layer_call_flops = ToLayerOperatorFlops(std::move(layer_call_flops));
  }
  return FinishCrawl(std::move(record), options.strict);
}

}  // namespace torchscan
