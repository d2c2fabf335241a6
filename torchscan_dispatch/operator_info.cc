#include "torchscan_dispatch/operator_info.h"

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace torchscan::dispatch {
namespace {

// Operators are identified by the address of their OperatorName, which the
// dispatcher keeps stable while the operator is registered. When an operator
// is removed (a Python torch.library.Library going away), its address may be
// reused, so removal bumps an epoch that makes every thread drop its cache.
using OperatorKey = const void*;

OperatorKey KeyOf(const c10::OperatorHandle& op) { return &op.operator_name(); }

class Registry {
 public:
  static Registry& Get() {
    // Leaked on purpose: the fallback may run during static destruction.
    static Registry* registry = new Registry();
    return *registry;
  }

  const OperatorInfo* Find(OperatorKey key) {
    absl::MutexLock lock(&mu_);
    auto it = by_key_.find(key);
    return it == by_key_.end() ? nullptr : it->second;
  }

  // Inserts `info` unless another thread got there first; returns the entry.
  const OperatorInfo* Insert(OperatorKey key, OperatorInfo info) {
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = by_key_.try_emplace(key, nullptr);
    if (inserted) {
      info.id = static_cast<std::uint32_t>(infos_.size());
      infos_.push_back(std::move(info));
      it->second = &infos_.back();
    }
    return it->second;
  }

  // Synthetic entries are keyed by their interned name.
  const OperatorInfo* Synthetic(const std::string& packet,
                                const formulas::OperatorFormulaEntry* formula,
                                const std::string& unseen_reason) {
    absl::MutexLock lock(&mu_);
    auto [it, inserted] =
        synthetic_.try_emplace(std::make_pair(packet, unseen_reason), nullptr);
    if (inserted) {
      OperatorInfo info;
      info.id = static_cast<std::uint32_t>(infos_.size());
      info.packet = packet;
      info.report_name = absl::StrReplaceAll(packet, {{"::", "."}});
      info.formula = formula;
      info.unseen_reason = unseen_reason;
      info.attention_mask = FindAttentionMaskRule(packet, nullptr);
      infos_.push_back(std::move(info));
      it->second = &infos_.back();
    }
    return it->second;
  }

  const OperatorInfo& ById(std::uint32_t id) {
    absl::MutexLock lock(&mu_);
    return infos_.at(id);
  }

  void Forget(OperatorKey key) {
    absl::MutexLock lock(&mu_);
    by_key_.erase(key);
    removal_epoch.fetch_add(1, std::memory_order_acq_rel);
  }

  // Bumped whenever an operator is removed; constant-initialized so the hot
  // path reads it without touching the registry.
  static inline std::atomic<std::uint64_t> removal_epoch{0};

 private:
  Registry();

  c10::RegistrationHandleRAII* const listener_;
  absl::Mutex mu_;
  absl::flat_hash_map<OperatorKey, const OperatorInfo*> by_key_
      ABSL_GUARDED_BY(mu_);
  std::deque<OperatorInfo> infos_ ABSL_GUARDED_BY(mu_);  // stable addresses
  // (packet, unseen reason): two graphs left unseen for different reasons
  // keep both reasons.
  absl::flat_hash_map<std::pair<std::string, std::string>, const OperatorInfo*>
      synthetic_ ABSL_GUARDED_BY(mu_);
};

class ForgetRemovedOperators : public c10::OpRegistrationListener {
 public:
  void onOperatorRegistered(const c10::OperatorHandle&) override {}
  void onOperatorDeregistered(const c10::OperatorHandle& op) override {
    Registry::Get().Forget(KeyOf(op));
  }
};

Registry::Registry()
    // The handle is leaked with the registry: the listener must outlive every
    // operator removal, including those during static destruction. The
    // registry holds the pointer, so leak checkers see it as still reachable.
    : listener_(new c10::RegistrationHandleRAII(
          c10::Dispatcher::singleton().addRegistrationListener(
              std::make_unique<ForgetRemovedOperators>()))) {}

// NOTE [Precision rules by operator]
// The operators whose float32 calls may run as TF32 on CUDA (PyTorch routes
// them to cuBLAS GEMMs or cuDNN convolutions, which honour the TF32
// settings; matrix-vector and dot products do not use tensor cores), and
// those that quantize float activations to int8 inside the kernel (dynamic
// quantization), whose dtypes alone would say float32.
PrecisionRule PrecisionRuleOf(absl::string_view packet) {
  static constexpr absl::string_view kCublas[] = {
      "aten::mm",      "aten::addmm",  "aten::bmm",
      "aten::baddbmm", "aten::addbmm", "aten::_addmm_activation"};
  static constexpr absl::string_view kCudnn[] = {
      "aten::convolution", "aten::_convolution", "aten::cudnn_convolution",
      "aten::convolution_backward"};
  static constexpr absl::string_view kDynamicInt8[] = {
      "quantized::linear_dynamic",
      "quantized::linear_relu_dynamic",
      "quantized::conv1d_dynamic",
      "quantized::conv2d_dynamic",
      "quantized::conv3d_dynamic",
      "quantized::conv_transpose1d_dynamic",
      "quantized::conv_transpose2d_dynamic",
      "quantized::conv_transpose3d_dynamic",
      "_quantized::linear_dynamic",
      "_quantized::wrapped_quantized_linear",
      "_quantized::_wrapped_quantized_linear_prepacked",
      "aten::_wrapped_quantized_linear_prepacked",
      "aten::fbgemm_linear_int8_weight",
      "aten::fbgemm_linear_int8_weight_fp32_activation",
      "quantized::linear_with_input_q_dq_qweight_dq_output_fp32",
      "quantized::linear_with_input_q_dq_qweight_dq_relu_output_fp32"};
  for (absl::string_view name : kCublas) {
    if (packet == name) return PrecisionRule::kCublasProduct;
  }
  for (absl::string_view name : kCudnn) {
    if (packet == name) return PrecisionRule::kCudnnConvolution;
  }
  for (absl::string_view name : kDynamicInt8) {
    if (packet == name) return PrecisionRule::kInt8;
  }
  return PrecisionRule::kInputs;
}

bool HoldsTensors(const c10::TypePtr& type) {
  if (type->kind() == c10::TensorType::Kind) return true;
  if (const auto* optional = type->castRaw<c10::OptionalType>()) {
    return HoldsTensors(optional->getElementType());
  }
  if (const auto* list = type->castRaw<c10::ListType>()) {
    return HoldsTensors(list->getElementType());
  }
  return false;
}

SchemaValueFacts FactsOf(const c10::Argument& value) {
  SchemaValueFacts facts;
  facts.holds_tensors = HoldsTensors(value.type());
  facts.is_scalar = value.type()->kind() == c10::NumberType::Kind;
  facts.is_out = value.is_out();
  if (const c10::AliasInfo* alias = value.alias_info()) {
    facts.aliases = true;
    facts.writes = alias->isWrite();
    for (const c10::Symbol& set : alias->beforeSets()) {
      facts.alias_sets.push_back(set.toQualString());
    }
  }
  return facts;
}

ByteRule ByteRuleOf(const std::string& packet,
                    const c10::FunctionSchema& schema) {
  std::vector<SchemaValueFacts> arguments, results;
  for (const c10::Argument& argument : schema.arguments()) {
    arguments.push_back(FactsOf(argument));
  }
  for (const c10::Argument& result : schema.returns()) {
    results.push_back(FactsOf(result));
  }
  return DecideByteRule(packet, arguments, results);
}

// Types whose values hold no tensor, and are no container of other types.
bool IsTensorFreeLeaf(c10::TypeKind kind) {
  switch (kind) {
    case c10::TypeKind::IntType:
    case c10::TypeKind::FloatType:
    case c10::TypeKind::ComplexType:
    case c10::TypeKind::NumberType:
    case c10::TypeKind::BoolType:
    case c10::TypeKind::StringType:
    case c10::TypeKind::NoneType:
    case c10::TypeKind::SymIntType:
    case c10::TypeKind::SymFloatType:
    case c10::TypeKind::SymBoolType:
    case c10::TypeKind::ScalarTypeType:
    case c10::TypeKind::LayoutType:
    case c10::TypeKind::MemoryFormatType:
    case c10::TypeKind::QSchemeType:
    case c10::TypeKind::DeviceObjType:
    case c10::TypeKind::StreamObjType:
    case c10::TypeKind::GeneratorType:
    case c10::TypeKind::StorageType:
      return true;
    default:
      return false;
  }
}

// Whether a value of schema type `type` may be or contain a tensor
// (NOTE [Arguments the precision scan reads] in operator_info.h): anything
// not known to hold none may.
bool MayHoldTensor(const c10::Type& type) {
  if (IsTensorFreeLeaf(type.kind())) return false;
  switch (type.kind()) {
    case c10::TypeKind::ListType:
    case c10::TypeKind::OptionalType:
    case c10::TypeKind::TupleType:
    case c10::TypeKind::DictType:
      for (const c10::TypePtr& contained : type.containedTypes()) {
        if (MayHoldTensor(*contained)) return true;
      }
      return false;
    default:
      return true;
  }
}

std::uint64_t TensorArgumentsOf(const c10::FunctionSchema& schema) {
  std::uint64_t bits = 0;
  const auto& arguments = schema.arguments();
  for (std::size_t i = 0; i < arguments.size() && i < 64; ++i) {
    if (MayHoldTensor(*arguments[i].type())) bits |= std::uint64_t{1} << i;
  }
  return bits;
}

// NOTE [Tags of untagged overloads]
// ATen tags an operator's functional overload (where.self, masked_fill.Scalar)
// but often not its siblings (where.ScalarOther, masked_fill.Tensor, the out=
// overloads), which compute the same thing. An overload with neither tag
// takes the tag that its packet's tagged overloads agree on; a packet whose
// overloads disagree (max.other is pointwise, max.dim a reduction) gives its
// untagged overloads none, so they stay uncounted rather than guessed. The
// dispatcher lists operators only all at once (about 3,600 names), so the
// tags of every packet are gathered in one pass, when an untagged overload is
// first described, and again only when a packet registered since is asked
// for.
class PacketTags {
 public:
  static formulas::ElementwiseTags Of(const c10::OperatorName& name) {
    static PacketTags* const tags = new PacketTags();  // leaked, as Registry
    if (std::optional<formulas::ElementwiseTags> found =
            tags->Find(name.name)) {
      return *found;
    }
    // Gathered outside the lock: the dispatcher takes its own.
    absl::flat_hash_map<std::string, Seen> gathered = Gather();
    absl::MutexLock lock(&tags->mu_);
    tags->by_packet_ = std::move(gathered);
    return Agreed(tags->by_packet_[name.name]);
  }

 private:
  struct Seen {
    bool pointwise = false;
    bool reduction = false;
  };

  static formulas::ElementwiseTags Agreed(Seen seen) {
    if (seen.pointwise == seen.reduction) return {};
    return {.pointwise = seen.pointwise, .reduction = seen.reduction};
  }

  static absl::flat_hash_map<std::string, Seen> Gather() {
    absl::flat_hash_map<std::string, Seen> by_packet;
    c10::Dispatcher& dispatcher = c10::Dispatcher::singleton();
    for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
      Seen& seen = by_packet[name.name];
      const std::optional<c10::OperatorHandle> op = dispatcher.findOp(name);
      if (!op || !op->hasSchema()) continue;
      seen.pointwise = seen.pointwise || op->hasTag(at::Tag::pointwise);
      seen.reduction = seen.reduction || op->hasTag(at::Tag::reduction);
    }
    return by_packet;
  }

  std::optional<formulas::ElementwiseTags> Find(const std::string& packet) {
    absl::MutexLock lock(&mu_);
    auto it = by_packet_.find(packet);
    if (it == by_packet_.end()) return std::nullopt;
    return Agreed(it->second);
  }

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Seen> by_packet_ ABSL_GUARDED_BY(mu_);
};

// A schema returns views when every result aliases an argument without
// writing it (`Tensor(a)`, `Tensor(a)[]`).
bool ReturnsViews(const c10::FunctionSchema& schema) {
  if (schema.returns().empty()) return false;
  for (const c10::Argument& result : schema.returns()) {
    if (result.alias_info() == nullptr || result.alias_info()->isWrite()) {
      return false;
    }
  }
  return true;
}

// The facts of `op`'s schema that the elementwise convention reads
// (formulas/elementwise_formulas.h). An operator without a schema has none:
// only the convention's tables apply to it.
formulas::ElementwiseTags ElementwiseTagsOf(const c10::OperatorHandle& op) {
  if (!op.hasSchema()) return {};
  formulas::ElementwiseTags tags{.pointwise = op.hasTag(at::Tag::pointwise),
                                 .reduction = op.hasTag(at::Tag::reduction)};
  if (!tags.pointwise && !tags.reduction) {
    tags = PacketTags::Of(op.operator_name());
  }
  tags.view = ReturnsViews(op.schema());
  return tags;
}

OperatorInfo Describe(const c10::OperatorHandle& op) {
  OperatorInfo info;
  info.packet = op.operator_name().name;
  info.overload = op.operator_name().overload_name;
  info.report_name = absl::StrReplaceAll(info.packet, {{"::", "."}});
  info.decomposes =
      op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd);
  info.formula = formulas::FindOperatorFormula(info.packet);
  info.ignored = formulas::FindIgnoredOperator(info.packet);
  info.precision_rule = PrecisionRuleOf(info.packet);
  if (op.hasSchema()) {
    info.num_arguments = op.schema().arguments().size();
    info.num_returns = op.schema().returns().size();
    info.writes_arguments = false;
    info.bytes = ByteRuleOf(info.packet, op.schema());
    for (const c10::Argument& argument : op.schema().arguments()) {
      if (argument.alias_info() != nullptr &&
          argument.alias_info()->isWrite()) {
        info.writes_arguments = true;
      }
    }
    info.tensor_arguments = TensorArgumentsOf(op.schema());
  }
  info.pads_nested = info.packet == "aten::matmul" ||
                     info.packet == "aten::matmul_backward" ||
                     info.packet == "aten::_native_multi_head_attention" ||
                     info.packet == "aten::_transformer_encoder_layer_fwd";
  info.attention_mask = FindAttentionMaskRule(
      info.packet, op.hasSchema() ? &op.schema() : nullptr);
  info.collective = FindCollective(info.packet, &info.unknown_collective);
  if (info.ignored == nullptr) {
    info.ignored = CommunicationIgnoredEntry(info.packet);
  }
  if (info.formula == nullptr && info.ignored == nullptr &&
      !info.is_communication()) {
    const formulas::ElementwiseTags tags = ElementwiseTagsOf(op);
    info.elementwise = formulas::FindElementwiseRule(info.packet, tags);
    info.elementwise_ignored =
        formulas::FindElementwiseIgnored(info.packet, tags);
  }
  if (info.is_communication() && op.hasSchema()) {
    const auto& arguments = op.schema().arguments();
    for (std::size_t i = 0; i < arguments.size(); ++i) {
      if (arguments[i].name() == "process_group" ||
          arguments[i].name() == "group_name") {
        info.group_argument = static_cast<int>(i);
      }
    }
  }
  return info;
}

// NOTE [Operator cache slots]
// Keys are addresses inside the dispatcher's operator entries: nodes of one
// size (a few KiB), allocated one after another as operators register. Their
// addresses therefore differ by multiples of that size, and the slot the
// address's low bits chose ((address >> 4) % kSlots) put operators
// registered a fixed distance apart into one slot: aten::conv2d and
// aten::convolution, the two calls of every conv2d, evicted each other on
// each call, and each lookup took the registry's lock (about 470
// instructions instead of one compare). Multiplying by a constant with
// well-mixed bits (2^64 over the golden ratio) and taking the product's top
// bits spreads such regular addresses over all the slots.
std::size_t SlotOf(OperatorKey key) {
  static_assert((OperatorCache::kSlots & (OperatorCache::kSlots - 1)) == 0);
  constexpr int kSlotBits = __builtin_ctzll(OperatorCache::kSlots);
  const std::uint64_t mixed =
      static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(key)) *
      0x9E3779B97F4A7C15ull;
  return static_cast<std::size_t>(mixed >> (64 - kSlotBits));
}

}  // namespace

ThreadState& ThisThreadState() {
  thread_local ThreadState state;
  return state;
}

// Drops `cache` when an operator was removed since it was filled.
void Revalidate(OperatorCache& cache) {
  const std::uint64_t epoch =
      Registry::removal_epoch.load(std::memory_order_acquire);
  if (cache.epoch != epoch) {
    for (OperatorCache::Slot& slot : cache.slots) slot = {};
    cache.epoch = epoch;
  }
}

const OperatorInfo& OperatorInfoFor(const c10::OperatorHandle& op,
                                    OperatorCache& cache) {
  Revalidate(cache);
  const OperatorKey key = KeyOf(op);
  OperatorCache::Slot& slot = cache.slots[SlotOf(key)];
  if (slot.key == key) return *slot.info;

  Registry& registry = Registry::Get();
  const OperatorInfo* info = registry.Find(key);
  if (info == nullptr) {
    // Describe outside the registry lock: it calls into the dispatcher, whose
    // lock is held while our removal listener takes the registry lock.
    info = registry.Insert(key, Describe(op));
  }
  slot = {key, info};
  return *info;
}

const OperatorInfo* OperatorInfoForRecordFunction(const at::RecordFunction& fn,
                                                  OperatorCache& cache) {
  Revalidate(cache);
  const OperatorKey key = fn.name();
  OperatorCache::Slot& slot = cache.slots[SlotOf(key)];
  if (slot.key == key) return slot.info;
  const std::optional<c10::OperatorName> name = fn.operator_name();
  if (!name) return nullptr;
  const std::optional<c10::OperatorHandle> op =
      c10::Dispatcher::singleton().findOp(*name);
  if (!op) return nullptr;
  const OperatorInfo* info = &OperatorInfoFor(*op, ThisThreadState().operators);
  slot = {key, info};
  return info;
}

const OperatorInfo* OperatorInfoForName(const std::string& packet,
                                        const std::string& overload) {
  const std::optional<c10::OperatorHandle> op =
      c10::Dispatcher::singleton().findOp(c10::OperatorName(
          packet, overload == "default" ? std::string() : overload));
  return op ? &OperatorInfoFor(*op, ThisThreadState().operators) : nullptr;
}

const OperatorInfo& SyntheticOperatorInfo(
    const std::string& packet, const formulas::OperatorFormulaEntry* formula,
    const std::string& unseen_reason) {
  return *Registry::Get().Synthetic(packet, formula, unseen_reason);
}

const OperatorInfo& OperatorInfoById(std::uint32_t id) {
  return Registry::Get().ById(id);
}

}  // namespace torchscan::dispatch
