#include "torchscan_dispatch/unboxed_kernels.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/boxing/BoxedKernel.h>
#include <ATen/core/boxing/impl/boxing.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_ops.h>
#include <ATen/ops/_unsafe_view_ops.h>
#include <ATen/ops/add_ops.h>
#include <ATen/ops/addmm_ops.h>
#include <ATen/ops/bmm_ops.h>
#include <ATen/ops/conv2d_ops.h>
#include <ATen/ops/convolution_ops.h>
#include <ATen/ops/detach_ops.h>
#include <ATen/ops/mm_ops.h>
#include <ATen/ops/mul_ops.h>
#include <ATen/ops/t_ops.h>
#include <ATen/ops/transpose_ops.h>
#include <ATen/ops/view_ops.h>
#include <c10/core/Scalar.h>
#include <c10/core/SymInt.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "formulas/matmul_formulas.h"
#include "formulas/operator_call.h"
#include "formulas/operator_formulas.h"
#include "report/count.h"
#include "report/precision.h"
#include "torchscan_dispatch/call_bytes.h"
#include "torchscan_dispatch/call_recording.h"
#include "torchscan_dispatch/compute_precision.h"
#include "torchscan_dispatch/counting_fallback.h"
#include "torchscan_dispatch/counting_session.h"
#include "torchscan_dispatch/dispatch_key.h"
#include "torchscan_dispatch/operator_info.h"
#include "torchscan_dispatch/operator_values.h"
#include "torchscan_dispatch/thread_state.h"

namespace torchscan::dispatch {
namespace {

using formulas::OperatorValue;
using report::Count;
using report::Precision;

// NOTE [Unboxed kernels]
// A boxed fallback sees every operator, which is why counting is one
// kernel; the price is PyTorch's boxing of each call into a Stack of IValues
// and its unboxing for the next kernel, and our reduction of those IValues
// back to shapes (docs/performance.md, 2e). For the operators most counted
// calls are, a kernel of the operator's own signature stands on the key in
// front of the fallback. It counts a call only when the fallback would have
// counted it directly, reading the same values the fallback reads:
//  - the keys and the thread (CountsDirectlyByKeys): no functorch layer or
//    legacy batching, no Python key (no subclass, mode or tracing), not
//    compiling, not in a compiled graph, not in a forward-AD primal;
//  - a session, and an operator that does not decompose;
//  - every argument plain (Plain below): tensors strided, not nested, with
//    concrete sizes and no forward-AD tangent; integers and scalars
//    concrete;
//  - the session records the call by name (no formula), or its formula is
//    read before the call (ReadsArgumentsBeforeCall: shapes only, no
//    written argument, no custom or deferred formula);
//  - an attention call without is_causal or a mask (Unmasked below: a
//    sufficient condition; the fallback decides the rest).
// Then it records through the same functions the fallback's counted path
// uses, typed: the formula of the table (one source of truth, on the same
// OperatorValues, built in place from the typed arguments, or through its
// typed entry point: NOTE [Typed formulas]), the bytes rule (call_bytes.h)
// and the precision (compute_precision.h). Anything else is boxed and
// handed to the fallback, which decides as it always did. A composite
// operator (conv2d) is passed on with the key active, as the fallback
// passes it, when none of its arguments is nested and there is no Python
// key.

// Whether one typed argument is read as the fallback reads it boxed.
bool Plain(const at::Tensor& tensor) {
  if (!tensor.defined()) return true;
  const c10::TensorImpl& impl = *tensor.unsafeGetTensorImpl();
  return impl.layout() == c10::kStrided && !impl.is_nested() &&
         !impl.has_symbolic_sizes_strides() && !HasForwardGrad(tensor);
}
bool Plain(const std::optional<at::Tensor>& tensor) {
  return !tensor.has_value() || Plain(*tensor);
}
bool Plain(bool) { return true; }
bool Plain(std::int64_t) { return true; }
bool Plain(double) { return true; }
bool Plain(std::optional<double>) { return true; }
bool Plain(const c10::SymInt& value) { return !value.is_heap_allocated(); }
bool Plain(c10::SymIntArrayRef values) {
  for (const c10::SymInt& value : values) {
    if (value.is_heap_allocated()) return false;
  }
  return true;
}
// An unsigned integer past int64's range boxes as no int.
bool Plain(const c10::Scalar& value) {
  return !value.isSymbolic() && !value.isComplex() &&
         (value.type() != c10::ScalarType::UInt64 ||
          value.toUInt64() <= static_cast<std::uint64_t>(
                                  std::numeric_limits<std::int64_t>::max()));
}

// Reduces one plain argument or result into `converted` (default-built), as
// ToOperatorValueIn reduces its boxed IValue.
void Reduce(const at::Tensor& tensor, OperatorValue& converted) {
  TensorToOperatorValueIn(tensor, converted);
}
void Reduce(const std::optional<at::Tensor>& tensor, OperatorValue& converted) {
  if (tensor.has_value()) {
    TensorToOperatorValueIn(*tensor, converted);
  } else {
    converted.kind = OperatorValue::Kind::kNone;
  }
}
void Reduce(bool value, OperatorValue& converted) {
  converted.kind = OperatorValue::Kind::kBool;
  converted.boolean = value;
}
void Reduce(std::int64_t value, OperatorValue& converted) {
  converted.kind = OperatorValue::Kind::kInt;
  converted.integer = value;
}
void Reduce(double value, OperatorValue& converted) {
  converted.kind = OperatorValue::Kind::kDouble;
  converted.real = value;
}
void Reduce(std::optional<double> value, OperatorValue& converted) {
  if (value.has_value()) {
    Reduce(*value, converted);
  } else {
    converted.kind = OperatorValue::Kind::kNone;
  }
}
void Reduce(const c10::SymInt& value, OperatorValue& converted) {
  Reduce(value.as_int_unchecked(), converted);
}
void Reduce(c10::SymIntArrayRef values, OperatorValue& converted) {
  converted.kind = OperatorValue::Kind::kIntList;
  for (const c10::SymInt& value : values) {
    converted.integers.push_back(value.as_int_unchecked());
  }
}
void Reduce(const c10::Scalar& value, OperatorValue& converted) {
  if (value.isFloatingPoint()) {
    Reduce(value.toDouble(), converted);
  } else if (value.isBoolean()) {
    Reduce(value.toBool(), converted);
  } else {
    Reduce(value.toLong(), converted);
  }
}

// The tensor an argument holds, or nullptr.
const at::Tensor* TensorOf(const at::Tensor& tensor) {
  return tensor.defined() ? &tensor : nullptr;
}
const at::Tensor* TensorOf(const std::optional<at::Tensor>& tensor) {
  return tensor.has_value() && tensor->defined() ? &*tensor : nullptr;
}
template <typename Value>
const at::Tensor* TensorOf(const Value&) {
  return nullptr;
}

bool Nested(const at::Tensor* tensor) {
  return tensor != nullptr && tensor->is_nested();
}

// Calls `visit(index, value)` on each argument, in schema order.
template <typename Visit, typename... Args, std::size_t... I>
void ForEachIndexed(Visit&& visit, std::index_sequence<I...>,
                    const Args&... args) {
  (visit(I, args), ...);
}
template <typename Visit, typename... Args>
void ForEachArgument(Visit&& visit, const Args&... args) {
  ForEachIndexed(visit, std::index_sequence_for<Args...>{}, args...);
}

// A call's results as a tuple of references, so that one and several read
// the same way.
inline std::tuple<const at::Tensor&> Results(const at::Tensor& result) {
  return std::tie(result);
}
template <typename... Types>
const std::tuple<Types...>& Results(const std::tuple<Types...>& results) {
  return results;
}

template <typename Result>
constexpr std::size_t kResultCount =
    std::tuple_size_v<std::decay_t<decltype(Results(std::declval<Result>()))>>;

// ComputePrecision on typed arguments.
template <typename... Args>
Precision PrecisionOf(const OperatorInfo& info, const Args&... args) {
  PrecisionEvidence evidence;
  bool on_cuda = false;
  ForEachArgument(
      [&](std::size_t index, const auto& value) {
        const at::Tensor* tensor = TensorOf(value);
        if (tensor != nullptr && ((info.tensor_arguments >> index) & 1) != 0) {
          AddPrecisionTensor(*tensor, evidence, on_cuda);
        }
      },
      args...);
  return DecidePrecision(info, evidence, on_cuda);
}

// ArgumentBytesOf on typed arguments.
template <typename... Args>
CallBytes ArgumentBytesOfTyped(const OperatorInfo& info, const Args&... args) {
  CallBytes bytes;
  if (!ReadsArgumentBytes(info, sizeof...(Args), bytes)) return bytes;
  DistinctTensors read;
  ForEachArgument(
      [&](std::size_t index, const auto& value) {
        const ArgumentBytes role = info.bytes.arguments[index];
        const at::Tensor* tensor = TensorOf(value);
        if (role != ArgumentBytes::kNone && tensor != nullptr &&
            CountsBytes(*tensor)) {
          AddArgumentTensor(role, *tensor->unsafeGetTensorImpl(), read, bytes);
        }
      },
      args...);
  return bytes;
}

// AddResultBytes on typed results.
template <typename Result>
void AddResultBytesTyped(const OperatorInfo& info, const Result& result,
                         CallBytes& bytes) {
  constexpr std::size_t kCount = kResultCount<Result>;
  if (!ReadsResultBytes(info, kCount, bytes)) return;
  std::apply(
      [&](const auto&... results) {
        ForEachArgument(
            [&](std::size_t index, const at::Tensor& tensor) {
              if (CountsBytes(tensor)) {
                AddResultTensor(info.bytes.results[index],
                                *tensor.unsafeGetTensorImpl(), bytes);
              }
            },
            results...);
      },
      Results(result));
}

// Whether a call of an attention operator is surely unmasked: no is_causal,
// no mask tensor, and no argument that could mask otherwise.
bool Unmasked(const AttentionMaskRule& rule, const OperatorValue* arguments) {
  if (rule.always_masked || rule.mask_type >= 0 || rule.window_left >= 0 ||
      rule.window_right >= 0) {
    return false;
  }
  if (rule.is_causal >= 0) {
    const OperatorValue& causal = arguments[rule.is_causal];
    if (causal.kind != OperatorValue::Kind::kBool || causal.boolean) {
      return false;
    }
  }
  return rule.mask < 0 || arguments[rule.mask].is_none();
}

// NOTE [Typed formulas]
// Recording through the table's formula builds an OperatorValue per
// argument and result and evaluates the formula on them through a StatusOr:
// about 760 of the 2,593 instructions a counted 8x8 mm added. The matrix
// products' formulas have typed entry points (NOTE [Typed matrix products] in
// formulas/matmul_formulas.cc): the same checks and arithmetic on the two
// operands' sizes, read here from the typed tensors. TypedFormula<Op> names
// the table formula it stands for and is used only while the operator's
// formula is that one (a table entry changed to another formula cannot be
// counted by a stale typed one). Where the typed entry counts nothing (an
// undefined operand, a rank or inner-dimension mismatch, an overflow), the
// call takes the generic path, so the table's formula records its
// diagnostic as before. Operators without a TypedFormula (kTyped false)
// always take the generic path.
//
// NOTE [No function addresses in constant conditions]
// Whether an operator has a typed entry is a bool of its own, not
// `kTable != nullptr`: under the sanitizer configuration's flags GCC does
// not fold a function's address compared with null into a constant (it
// does not assume the function is away from address 0 there), so an
// `if constexpr` on that comparison fails to build with --config=asan.
template <typename Op>
struct TypedFormula {
  static constexpr bool kTyped = false;
};

// A typed entry point on two tensors' sizes; nothing for an undefined one.
template <std::optional<Count> (*kCount)(formulas::ShapeRef,
                                         formulas::ShapeRef)>
std::optional<Count> OnSizes(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined() || !b.defined()) return std::nullopt;
  // Plain tensors: not nested, no symbolic sizes (sizes() would throw).
  const c10::IntArrayRef a_sizes = a.sizes();
  const c10::IntArrayRef b_sizes = b.sizes();
  return kCount(formulas::ShapeRef(a_sizes.data(), a_sizes.size()),
                formulas::ShapeRef(b_sizes.data(), b_sizes.size()));
}

template <>
struct TypedFormula<at::_ops::mm> {
  static constexpr bool kTyped = true;
  static constexpr formulas::OperatorFormula kTable = &formulas::MmFlops;
  static std::optional<Count> Flops(const at::Tensor& self,
                                    const at::Tensor& mat2) {
    return OnSizes<&formulas::MatmulFlopCount>(self, mat2);
  }
};

template <>
struct TypedFormula<at::_ops::addmm> {
  static constexpr bool kTyped = true;
  static constexpr formulas::OperatorFormula kTable = &formulas::AddmmFlops;
  static std::optional<Count> Flops(const at::Tensor& /*self*/,
                                    const at::Tensor& mat1,
                                    const at::Tensor& mat2,
                                    const c10::Scalar& /*beta*/,
                                    const c10::Scalar& /*alpha*/) {
    return OnSizes<&formulas::MatmulFlopCount>(mat1, mat2);
  }
};

template <>
struct TypedFormula<at::_ops::bmm> {
  static constexpr bool kTyped = true;
  static constexpr formulas::OperatorFormula kTable = &formulas::BmmFlops;
  static std::optional<Count> Flops(const at::Tensor& self,
                                    const at::Tensor& mat2) {
    return OnSizes<&formulas::BatchedMatmulFlopCount>(self, mat2);
  }
};

// The kernel of operator `Op` (an at::_ops struct) on the counting key.
template <typename Op, typename Signature = typename Op::schema>
struct UnboxedKernel;

template <typename Op, typename Result, typename... Args>
struct UnboxedKernel<Op, Result(Args...)> {
  static const c10::OperatorHandle& Handle() {
    static const c10::OperatorHandle handle =
        c10::Dispatcher::singleton().findSchemaOrThrow(Op::name,
                                                       Op::overload_name);
    return handle;
  }

  // The fallback, on the call boxed.
  static Result Boxed(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                      Args... args) {
    static const c10::BoxedKernel fallback =
        c10::BoxedKernel::makeFromFunction<&CountingFallback>();
    return c10::impl::BoxedKernelWrapper<Result(Args...)>::call(
        fallback, op, keys, std::forward<Args>(args)...);
  }

  static Result Call(c10::DispatchKeySet keys, Args... args) {
    const c10::OperatorHandle& op = Handle();
    ThreadState& thread = ThisThreadState();
    const OperatorInfo& info = OperatorInfoFor(op, thread.operators);
    const c10::DispatchKeySet below =
        keys &
        c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kCountingKey);
    if (thread.execution.unboxed_off_depth > 0) {
      return Boxed(op, keys, std::forward<Args>(args)...);
    }
    if (info.decomposes) {
      if (info.attention_mask.has_value() ||
          keys.has(c10::DispatchKey::Python) ||
          (Nested(TensorOf(args)) || ...)) {
        return Boxed(op, keys, std::forward<Args>(args)...);
      }
      ++thread.execution.unboxed_calls;
      return Op::redispatch(below, std::forward<Args>(args)...);
    }
    CountingSession* session = CountingSession::Current();
    if (session == nullptr || !CountsDirectlyByKeys(keys, thread.execution) ||
        !(Plain(args) && ...)) {
      return Boxed(op, keys, std::forward<Args>(args)...);
    }
    if (!RecordingReadsValues(info, *session)) {
      return CountByName(info, below, *session, thread,
                         std::forward<Args>(args)...);
    }
    if (!ReadsArgumentsBeforeCall(info, *session)) {
      return Boxed(op, keys, std::forward<Args>(args)...);
    }
    if constexpr (TypedFormula<Op>::kTyped) {
      // The formula ReadsArgumentsBeforeCall found (FormulaFor) is
      // info.formula whenever that is set.
      if (info.formula != nullptr &&
          info.formula->formula == TypedFormula<Op>::kTable) {
        if (const std::optional<Count> flops =
                TypedFormula<Op>::Flops(args...)) {
          return CountTyped(info, *flops, below, *session, thread,
                            std::forward<Args>(args)...);
        }
      }
    }
    std::array<OperatorValue, sizeof...(Args)> arguments;
    ForEachArgument([&](std::size_t index,
                        const auto& value) { Reduce(value, arguments[index]); },
                    args...);
    if (info.attention_mask.has_value() &&
        !Unmasked(*info.attention_mask, arguments.data())) {
      return Boxed(op, keys, std::forward<Args>(args)...);
    }
    const Precision precision = PrecisionOf(info, args...);
    CallBytes bytes = ArgumentBytesOfTyped(info, args...);
    c10::impl::ExcludeDispatchKeyGuard exclude(kCountingKey);
    DepthGuard kernel(thread.execution.kernel_depth);
    Result result = Op::redispatch(below, std::forward<Args>(args)...);
    AddResultBytesTyped(info, result, bytes);
    std::array<OperatorValue, kResultCount<Result>> results;
    std::apply(
        [&](const auto&... values) {
          ForEachArgument(
              [&](std::size_t index, const at::Tensor& tensor) {
                Reduce(tensor, results[index]);
              },
              values...);
        },
        Results(result));
    ++thread.execution.unboxed_calls;
    RecordFormulaCall(info, arguments, results, precision, bytes, *session,
                      thread.session);
    return result;
  }

  // A call whose FLOPs its typed formula read before the call (NOTE [Typed
  // formulas]): its precision and bytes are read as on the generic path.
  static Result CountTyped(const OperatorInfo& info, Count flops,
                           c10::DispatchKeySet below, CountingSession& session,
                           ThreadState& thread, Args... args) {
    const Precision precision = PrecisionOf(info, args...);
    CallBytes bytes = ArgumentBytesOfTyped(info, args...);
    c10::impl::ExcludeDispatchKeyGuard exclude(kCountingKey);
    DepthGuard kernel(thread.execution.kernel_depth);
    Result result = Op::redispatch(below, std::forward<Args>(args)...);
    AddResultBytesTyped(info, result, bytes);
    ++thread.execution.unboxed_calls;
    session.RecordCounted(info, flops, precision, thread.session, bytes);
    return result;
  }

  // A call recorded by name (the operator has no formula in this session):
  // only its bytes are read.
  static Result CountByName(const OperatorInfo& info, c10::DispatchKeySet below,
                            CountingSession& session, ThreadState& thread,
                            Args... args) {
    CallBytes bytes = ArgumentBytesOfTyped(info, args...);
    c10::impl::ExcludeDispatchKeyGuard exclude(kCountingKey);
    DepthGuard kernel(thread.execution.kernel_depth);
    Result result = Op::redispatch(below, std::forward<Args>(args)...);
    AddResultBytesTyped(info, result, bytes);
    ++thread.execution.unboxed_calls;
    session.RecordCall(info, thread.session, bytes);
    return result;
  }
};

template <typename Op>
void Register(torch::Library& aten) {
  std::string name = Op::name;
  if (Op::overload_name[0] != '\0') {
    name += '.';
    name += Op::overload_name;
  }
  aten.impl(name.c_str(), TORCH_FN(UnboxedKernel<Op>::Call));
}

template <typename... Ops>
void RegisterAll(torch::Library& aten) {
  (Register<Ops>(aten), ...);
}

}  // namespace

// NOTE [Which operators have an unboxed kernel]
// The operators most counted calls are, each by its at::_ops struct: the
// kernel, its registration and its boxed form are derived from it. Adding
// one is one line here, if its argument types have a Plain and a Reduce
// above (a missing one does not compile). conv2d decomposes: our key sees
// it, then its convolution.
//
// And the calls without a formula a training step makes most (one eager
// step of examples/llm_step.py as a TorchDispatchMode sees it: t 75, view
// 62, add_ 42 and mul_ 42 from AdamW and the gradients, detach 37,
// _unsafe_view 22 and transpose 16 of its 694 calls): each is recorded by
// name, its bytes read, as the fallback records it, without boxing its
// arguments into a stack and unboxing them for the kernel below
// (docs/performance.md, "Calls without a formula").
void RegisterUnboxedKernels(torch::Library& aten) {
  RegisterAll<at::_ops::mm, at::_ops::addmm, at::_ops::bmm, at::_ops::conv2d,
              at::_ops::convolution,
              at::_ops::_scaled_dot_product_flash_attention_for_cpu,
              at::_ops::add_Tensor, at::_ops::mul_Tensor>(aten);
  RegisterAll<at::_ops::t, at::_ops::view, at::_ops::detach,
              at::_ops::_unsafe_view, at::_ops::transpose_int,
              at::_ops::add__Tensor, at::_ops::mul__Tensor>(aten);
}

UnboxedKernelsOff::UnboxedKernelsOff() {
  ++ThisThreadState().execution.unboxed_off_depth;
}

UnboxedKernelsOff::~UnboxedKernelsOff() {
  --ThisThreadState().execution.unboxed_off_depth;
}

std::uint64_t UnboxedCallsOnThisThread() {
  return ThisThreadState().execution.unboxed_calls;
}

}  // namespace torchscan::dispatch
