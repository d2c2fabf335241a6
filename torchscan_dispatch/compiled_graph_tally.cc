#include "torchscan_dispatch/compiled_graph_tally.h"

#include <ATen/ops/empty.h>
#include <c10/core/TensorOptions.h>
#include <c10/util/Exception.h>

#include <exception>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "formulas/attention_mask_pairs.h"
#include "formulas/exact_count.h"
#include "report/json_reader.h"
#include "torchscan_dispatch/byte_rule.h"
#include "torchscan_dispatch/call_recording.h"
#include "torchscan_dispatch/compiled_graph_spec.h"
#include "torchscan_dispatch/compute_precision.h"

namespace torchscan::dispatch {
namespace {

using formulas::OperatorValue;
using Kind = formulas::OperatorValue::Kind;
using Dimension = CompiledGraphTally::Dimension;
using Value = CompiledGraphTally::Value;

// Python's names of the dtypes ("float32", "bfloat16"), as the pass writes
// them (str(dtype) without "torch."), to c10's scalar types.
const absl::flat_hash_map<std::string, c10::ScalarType>& DtypesByName() {
  static const auto* by_name = [] {
    auto* names = new absl::flat_hash_map<std::string, c10::ScalarType>();
    for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
      const auto type = static_cast<c10::ScalarType>(i);
      try {
        names->emplace(std::string(c10::getDtypeNames(type).first), type);
      } catch (const std::exception&) {
        // A scalar type Python has no dtype for (Undefined): never written.
      }
    }
    return names;
  }();
  return *by_name;
}

// The scalar type Python names `name`; `path` names it in the error.
absl::StatusOr<c10::ScalarType> DtypeNamed(const std::string& name,
                                           absl::string_view path) {
  auto it = DtypesByName().find(name);
  if (it == DtypesByName().end()) {
    return report::FieldError(path, absl::StrCat("unknown dtype '", name, "'"));
  }
  return it->second;
}

// The tally's form of the spec value at `path` (SpecValue::Validate saw that
// it has one kind, and a dtype per tensor).
absl::StatusOr<Value> ToValue(const SpecValue& spec, const std::string& path) {
  Value value;
  if (spec.tensor || spec.ints) {
    value.kind = spec.tensor ? Kind::kTensor : Kind::kIntList;
    value.dimensions = spec.tensor ? *spec.tensor : *spec.ints;
    if (spec.dtype) {
      TS_ASSIGN_OR_RETURN(
          value.dtype,
          DtypeNamed(*spec.dtype, report::MemberPath(path, "dtype")));
    }
  } else if (spec.int_value) {
    value.kind = Kind::kInt;
    value.dimensions = {*spec.int_value};
  } else if (spec.tensors) {
    value.kind = Kind::kTensorList;
    value.tensor_dimensions = *spec.tensors;
    for (std::size_t i = 0; spec.dtypes && i < spec.dtypes->size(); ++i) {
      std::optional<c10::ScalarType> dtype;
      if (const std::optional<std::string>& name = (*spec.dtypes)[i]) {
        TS_ASSIGN_OR_RETURN(
            dtype,
            DtypeNamed(*name, report::IndexPath(
                                  report::MemberPath(path, "dtypes"), i)));
      }
      value.tensor_dtypes.push_back(dtype);
    }
  } else if (spec.bool_value) {
    value.kind = Kind::kBool;
    value.boolean = *spec.bool_value;
  } else if (spec.bools) {
    value.kind = Kind::kBoolList;
    value.booleans = *spec.bools;
  } else if (spec.float_value) {
    value.kind = Kind::kDouble;
    value.real = *spec.float_value;
  } else if (spec.none) {
    value.kind = Kind::kNone;
  } else if (spec.unknown_tensor) {
    value.kind = Kind::kTensor;
    value.unknown_shape = true;
  } else if (spec.str) {
    value.kind = Kind::kOther;
    value.text = *spec.str;
  } else {
    value.kind = Kind::kOther;  // "other"
  }
  return value;
}

absl::StatusOr<std::vector<Value>> ToValues(const std::vector<SpecValue>& specs,
                                            const std::string& path) {
  std::vector<Value> values;
  values.reserve(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    TS_ASSIGN_OR_RETURN(Value value,
                        ToValue(specs[i], report::IndexPath(path, i)));
    values.push_back(std::move(value));
  }
  return values;
}

bool UsesSymbols(const std::vector<Dimension>& dimensions) {
  for (const Dimension& dimension : dimensions) {
    if (std::holds_alternative<std::size_t>(dimension)) return true;
  }
  return false;
}

bool UsesSymbols(const Value& value) {
  if (UsesSymbols(value.dimensions)) return true;
  for (const auto& shape : value.tensor_dimensions) {
    if (shape && UsesSymbols(*shape)) return true;
  }
  return false;
}

// Binds a value's symbols; an index beyond `symbols` is an error.
absl::StatusOr<std::int64_t> Bind(const Dimension& dimension,
                                  absl::Span<const std::int64_t> symbols) {
  if (const auto* constant = std::get_if<std::int64_t>(&dimension)) {
    return *constant;
  }
  const std::size_t index = std::get<std::size_t>(dimension);
  if (index >= symbols.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("compiled graph spec: symbol ", index, " of ",
                     symbols.size(), " passed"));
  }
  return symbols[index];
}

absl::StatusOr<formulas::Shape> BindAll(
    const std::vector<Dimension>& dims,
    absl::Span<const std::int64_t> symbols) {
  formulas::Shape bound;
  for (const Dimension& dimension : dims) {
    TS_ASSIGN_OR_RETURN(std::int64_t size, Bind(dimension, symbols));
    bound.push_back(size);
  }
  return bound;
}

absl::StatusOr<OperatorValue> ToOperatorValue(
    const Value& value, absl::Span<const std::int64_t> symbols) {
  switch (value.kind) {
    case Kind::kTensor: {
      if (value.unknown_shape) return OperatorValue::UnknownShapeTensor();
      TS_ASSIGN_OR_RETURN(formulas::Shape shape,
                          BindAll(value.dimensions, symbols));
      return OperatorValue::Tensor(std::move(shape));
    }
    case Kind::kInt: {
      TS_ASSIGN_OR_RETURN(std::int64_t integer,
                          Bind(value.dimensions[0], symbols));
      return OperatorValue::Int(integer);
    }
    case Kind::kIntList: {
      TS_ASSIGN_OR_RETURN(formulas::Shape integers,
                          BindAll(value.dimensions, symbols));
      return OperatorValue::IntList({integers.begin(), integers.end()});
    }
    case Kind::kTensorList: {
      OperatorValue list = OperatorValue::OfKind(Kind::kTensorList);
      for (const auto& dims : value.tensor_dimensions) {
        if (!dims) {
          list.shapes.emplace_back(std::nullopt);
          continue;
        }
        TS_ASSIGN_OR_RETURN(formulas::Shape shape, BindAll(*dims, symbols));
        list.shapes.emplace_back(std::move(shape));
      }
      return list;
    }
    case Kind::kBool:
      return OperatorValue::Bool(value.boolean);
    case Kind::kBoolList:
      return OperatorValue::BoolList(value.booleans);
    case Kind::kDouble:
      return OperatorValue::Real(value.real);
    case Kind::kNone:
      return OperatorValue::None();
    case Kind::kOther:
      return OperatorValue{};
  }
  return OperatorValue{};
}

absl::StatusOr<std::vector<OperatorValue>> ToOperatorValues(
    const std::vector<Value>& values, absl::Span<const std::int64_t> symbols) {
  std::vector<OperatorValue> converted;
  converted.reserve(values.size());
  for (const Value& value : values) {
    TS_ASSIGN_OR_RETURN(OperatorValue one, ToOperatorValue(value, symbols));
    converted.push_back(std::move(one));
  }
  return converted;
}

// NOTE [Bytes of compiled graphs]
// A compiled graph's kernels are fused: what they read and write is not what
// the eager operators of its post-grad graph would move, and no dispatcher
// call shows it. What the spec does say bounds it, run by run:
//  - the lower bound: the graph's own inputs read once and its outputs
//    written once. Its fused code must read every input some operator reads
//    and write every output it computes (the pass leaves out inputs only
//    passed through or written, outputs that are inputs or views of them,
//    and counts an output once however often it is returned). It is added to
//    the bytes moved under the pseudo-operator kCompiledGraphOperator, in
//    the scope of the compiled module, so the report's total stays a known
//    lower bound, partial;
//  - the upper bound: the unfused sum, every call of the graph by the eager
//    rule (NOTE [The bytes rule] in byte_rule.h), its tensors taken as
//    contiguous (the spec keeps no strides, and an expanded operand is
//    counted at its full size), a tensor passed twice to one call counted
//    twice (the spec keeps no identities): each only raises the sum. A
//    decomposed product is counted as its broadcast multiply (its operands
//    read, the M x K x N product written), which bounds the product's own.
//    A value of a tensor argument that is a number is a wrapped number and
//    moves nothing, as in eager code.
// A call whose bytes cannot be read (an operator without a schema, a tensor
// of unknown size or dtype, a description that does not match the schema)
// is left out of the upper bound, which is then partial. The compiled
// calls themselves record FLOPs only.

// The bytes of a described tensor (contiguous), or why they are not known.
absl::StatusOr<std::int64_t> DescribedTensorBytes(
    const std::vector<Dimension>& dims, std::optional<c10::ScalarType> dtype,
    absl::Span<const std::int64_t> symbols) {
  if (!dtype) return absl::NotFoundError("a tensor without a dtype");
  TS_ASSIGN_OR_RETURN(formulas::Shape shape, BindAll(dims, symbols));
  const std::vector<std::int64_t> strides(shape.size(), 1);
  const std::optional<std::int64_t> bytes = StridedTensorBytes(
      static_cast<std::int64_t>(c10::elementSize(*dtype)), shape, strides);
  if (!bytes) return absl::OutOfRangeError("a tensor's bytes overflow");
  return *bytes;
}

// Adds the bytes of every tensor of `value` to `into`; an error says why
// they are not known. A number where a tensor goes is a wrapped number:
// nothing.
absl::Status AddDescribedBytes(const Value& value,
                               absl::Span<const std::int64_t> symbols,
                               std::int64_t& into) {
  auto add = [&](std::int64_t bytes) -> absl::Status {
    if (__builtin_add_overflow(into, bytes, &into)) {
      return absl::OutOfRangeError("the byte count overflows");
    }
    return absl::OkStatus();
  };
  switch (value.kind) {
    case Kind::kTensor: {
      if (value.unknown_shape) {
        return absl::NotFoundError("a tensor of unknown size");
      }
      TS_ASSIGN_OR_RETURN(
          std::int64_t bytes,
          DescribedTensorBytes(value.dimensions, value.dtype, symbols));
      return add(bytes);
    }
    case Kind::kTensorList:
      for (std::size_t i = 0; i < value.tensor_dimensions.size(); ++i) {
        if (!value.tensor_dimensions[i]) {
          return absl::NotFoundError("a tensor of unknown size");
        }
        const std::optional<c10::ScalarType> dtype =
            i < value.tensor_dtypes.size() ? value.tensor_dtypes[i]
                                           : std::nullopt;
        TS_ASSIGN_OR_RETURN(
            std::int64_t bytes,
            DescribedTensorBytes(*value.tensor_dimensions[i], dtype, symbols));
        TS_RETURN_IF_ERROR(add(bytes));
      }
      return absl::OkStatus();
    case Kind::kOther:
      return absl::NotFoundError("a tensor argument the spec does not show");
    default:
      return absl::OkStatus();  // none, or a wrapped number
  }
}

// What `call` moves by the eager bytes rule, its values as described (NOTE
// [Bytes of compiled graphs]).
absl::StatusOr<CallBytes> DescribedCallBytes(
    const CompiledGraphTally::Call& call,
    absl::Span<const std::int64_t> symbols) {
  CallBytes bytes;
  if (call.decomposed_product) {
    for (const Value& value : call.arguments) {
      TS_RETURN_IF_ERROR(AddDescribedBytes(value, symbols, bytes.read));
    }
    for (const Value& value : call.results) {
      TS_RETURN_IF_ERROR(AddDescribedBytes(value, symbols, bytes.written));
    }
    return bytes;
  }
  const ByteRule& rule = call.info->bytes;
  if (rule.moves_nothing) return bytes;
  if (!rule.decided) {
    return absl::NotFoundError("an operator without a schema");
  }
  if (rule.arguments.size() != call.arguments.size() ||
      (rule.results.size() != 1 &&
       rule.results.size() != call.results.size())) {
    return absl::NotFoundError(
        "a description that does not match the operator's schema");
  }
  for (std::size_t i = 0; i < call.arguments.size(); ++i) {
    const ArgumentBytes role = rule.arguments[i];
    if (role == ArgumentBytes::kNone) continue;
    if (role != ArgumentBytes::kWritten) {
      TS_RETURN_IF_ERROR(
          AddDescribedBytes(call.arguments[i], symbols, bytes.read));
    }
    if (role != ArgumentBytes::kRead) {
      TS_RETURN_IF_ERROR(
          AddDescribedBytes(call.arguments[i], symbols, bytes.written));
    }
  }
  // One result in the schema: every described value is its (a Tensor[]
  // result is described tensor by tensor).
  for (std::size_t i = 0; i < call.results.size(); ++i) {
    const ResultBytes role = rule.results[rule.results.size() == 1 ? 0 : i];
    if (role != ResultBytes::kWritten) continue;
    TS_RETURN_IF_ERROR(
        AddDescribedBytes(call.results[i], symbols, bytes.written));
  }
  return bytes;
}

// Adds the bytes of `values` (the graph's inputs or outputs) to `into`,
// counting those that are not known in `unknown`.
void AddGraphValues(const std::vector<Value>& values,
                    absl::Span<const std::int64_t> symbols, report::Count& into,
                    report::Count& unknown) {
  for (const Value& value : values) {
    std::int64_t bytes = 0;
    if (AddDescribedBytes(value, symbols, bytes).ok()) {
      into += bytes;
    } else {
      unknown += 1;
    }
  }
}

// "compiled graph 0/0 (forward)".
std::string GraphName(const std::string& family, const std::string& graph) {
  std::string name = "compiled graph";
  if (!family.empty()) absl::StrAppend(&name, " ", family);
  if (!graph.empty()) absl::StrAppend(&name, " (", graph, ")");
  return name;
}

// The FLOPs `formula` (the formula table's or a session's custom one) gives
// for one call, or why they cannot be had. A formula that throws is a failed
// call, never an exception in the compiled code that records the graph.
template <typename Formula>
absl::StatusOr<Count> EvaluateWith(const Formula& formula,
                                   const CompiledGraphTally::Call& call,
                                   absl::Span<const std::int64_t> symbols) {
  TS_ASSIGN_OR_RETURN(const std::vector<OperatorValue> arguments,
                      ToOperatorValues(call.arguments, symbols));
  TS_ASSIGN_OR_RETURN(const std::vector<OperatorValue> results,
                      ToOperatorValues(call.results, symbols));
  try {
    return formula(formulas::OperatorCall{arguments, results});
  } catch (const c10::Error& error) {
    return absl::InternalError(absl::StrCat("the FLOP formula threw: ",
                                            error.what_without_backtrace()));
  } catch (const std::exception& error) {
    return absl::InternalError(
        absl::StrCat("the FLOP formula threw: ", error.what()));
  }
}

// A meta tensor of `dims` (bound) and `dtype`: what a deferred formula gets
// for a described tensor (contiguous; the spec keeps no strides).
absl::StatusOr<c10::IValue> MetaTensor(const std::vector<Dimension>& dims,
                                       c10::ScalarType dtype,
                                       absl::Span<const std::int64_t> symbols) {
  TS_ASSIGN_OR_RETURN(formulas::Shape shape, BindAll(dims, symbols));
  return at::empty(c10::IntArrayRef(shape.data(), shape.size()),
                   at::TensorOptions().dtype(dtype).device(at::kMeta));
}

// NOTE [Deferred calls of a compiled graph]
// A deferred formula (Python's custom_mapping or register_flop_formula) is
// called after the workload with the call's arguments and results, as the
// fallback keeps them for an eager call: meta tensors and plain values. A
// compiled graph's call has only its description, so its values are rebuilt
// from it; what the spec does not fully describe (an "other" value, a tensor
// of unknown shape or dtype) is None, and it is the formula's to cope with:
// one that fails is named in the report like any other failing formula.
absl::StatusOr<c10::IValue> ToDeferredIValue(
    const Value& value, absl::Span<const std::int64_t> symbols) {
  switch (value.kind) {
    case Kind::kTensor:
      if (value.unknown_shape || !value.dtype) return c10::IValue();
      return MetaTensor(value.dimensions, *value.dtype, symbols);
    case Kind::kInt: {
      TS_ASSIGN_OR_RETURN(std::int64_t integer,
                          Bind(value.dimensions[0], symbols));
      return c10::IValue(integer);
    }
    case Kind::kIntList: {
      TS_ASSIGN_OR_RETURN(formulas::Shape integers,
                          BindAll(value.dimensions, symbols));
      c10::List<std::int64_t> list;
      for (std::int64_t integer : integers) list.push_back(integer);
      return c10::IValue(std::move(list));
    }
    case Kind::kTensorList: {
      if (value.tensor_dtypes.size() != value.tensor_dimensions.size()) {
        return c10::IValue();
      }
      c10::List<at::Tensor> tensors;
      for (std::size_t i = 0; i < value.tensor_dimensions.size(); ++i) {
        if (!value.tensor_dimensions[i] || !value.tensor_dtypes[i]) {
          return c10::IValue();
        }
        TS_ASSIGN_OR_RETURN(c10::IValue tensor,
                            MetaTensor(*value.tensor_dimensions[i],
                                       *value.tensor_dtypes[i], symbols));
        tensors.push_back(tensor.toTensor());
      }
      return c10::IValue(std::move(tensors));
    }
    case Kind::kBool:
      return c10::IValue(value.boolean);
    case Kind::kBoolList: {
      c10::List<bool> list;
      for (bool item : value.booleans) list.push_back(item);
      return c10::IValue(std::move(list));
    }
    case Kind::kDouble:
      return c10::IValue(value.real);
    case Kind::kOther:
      if (value.text) return c10::IValue(*value.text);
      return c10::IValue();
    case Kind::kNone:
      return c10::IValue();
  }
  return c10::IValue();
}

absl::StatusOr<std::vector<c10::IValue>> ToDeferredIValues(
    const std::vector<Value>& values, absl::Span<const std::int64_t> symbols) {
  std::vector<c10::IValue> converted;
  converted.reserve(values.size());
  for (const Value& value : values) {
    TS_ASSIGN_OR_RETURN(c10::IValue one, ToDeferredIValue(value, symbols));
    converted.push_back(std::move(one));
  }
  return converted;
}

// NOTE [Collectives in compiled graphs]
// The spec gives a collective's tensors (shapes and dtypes) and its group's
// registered name, which is what reading an eager call's volume needs: the
// call's arguments are rebuilt as for a deferred call (meta tensors, the name
// as a string) and measured by the fallback's own rules (collective_calls.h).
// What cannot be rebuilt (an unknown shape or dtype, a group passed some
// other way, a group no longer registered) is named as unmeasured, and the
// communication metric is partial, never a silent zero.
void RecordCompiledCollective(CountingSession& session,
                              const CompiledGraphTally::Call& call,
                              absl::Span<const std::int64_t> symbols) {
  absl::StatusOr<std::vector<c10::IValue>> arguments;
  {
    NotCounted not_counted;
    try {
      arguments = ToDeferredIValues(call.arguments, symbols);
    } catch (const c10::Error& error) {
      arguments = absl::InternalError(error.what_without_backtrace());
    }
  }
  if (!arguments.ok()) {
    session.RecordUnreadableCommunication(
        *call.info,
        absl::StrCat("it ran inside a compiled graph whose description could "
                     "not be rebuilt: ",
                     arguments.status().message()));
    return;
  }
  RecordCommunicationOf(*call.info, *arguments, session);
}

// NOTE [Precision of compiled calls]
// A described call's compute precision comes from the dtypes the spec gives
// its tensor arguments, by the eager rules (compute_precision.h). A tensor
// the spec gives no dtype leaves the precision unknown, and so does a
// float32 product that could run as TF32 when the graph's device is not
// known (no device anchor): those FLOPs are reported under "unknown", never
// guessed.
Precision DescribedPrecision(const CompiledGraphTally::Call& call,
                             std::optional<c10::DeviceType> device) {
  PrecisionEvidence evidence;
  for (const CompiledGraphTally::Value& value : call.arguments) {
    if (value.kind == Kind::kTensor) {
      if (!value.dtype) return Precision::kUnknown;
      evidence.Add(*value.dtype,
                   !value.unknown_shape && value.dimensions.empty());
    } else if (value.kind == Kind::kTensorList) {
      if (value.tensor_dtypes.size() != value.tensor_dimensions.size()) {
        return Precision::kUnknown;
      }
      for (const std::optional<c10::ScalarType>& dtype : value.tensor_dtypes) {
        if (dtype) evidence.Add(*dtype, false);
      }
    }
  }
  return evidence.Decide(*call.info, device);
}

// Records `call` as a deferred call in `module_scope`, or says why its
// values could not be rebuilt.
absl::Status RecordDeferredCall(CountingSession& session,
                                const CompiledGraphTally::Call& call,
                                std::uint32_t module_scope,
                                absl::Span<const std::int64_t> symbols,
                                Precision precision) {
  NotCounted not_counted;
  try {
    TS_ASSIGN_OR_RETURN(std::vector<c10::IValue> arguments,
                        ToDeferredIValues(call.arguments, symbols));
    TS_ASSIGN_OR_RETURN(std::vector<c10::IValue> results,
                        ToDeferredIValues(call.results, symbols));
    session.RecordDeferredIn(*call.info, module_scope, std::move(arguments),
                             std::move(results), precision);
  } catch (const c10::Error& error) {
    return absl::InternalError(
        absl::StrCat("its values could not be made meta tensors: ",
                     error.what_without_backtrace()));
  }
  return absl::OkStatus();
}

// NOTE [Products that Inductor decomposed]
// Inductor's decomposition table rewrites small matrix products (mm, addmm,
// bmm on CPU; more on GPU) into a broadcast multiply, a sum and a scaling,
// before any post-grad pass sees the graph. Each such product multiply has
// M*K*N elements (the sum runs over K; with K = 1 there is no sum), so the
// product it came from costs 2 * numel(product), FlopCounterMode's count of
// the original operator; the pass describes only the multiply, under the
// original operator's name, and leaves out the rest of the rewrite.
absl::StatusOr<Count> EvaluateDecomposedProduct(
    const CompiledGraphTally::Call& call,
    absl::Span<const std::int64_t> symbols) {
  if (call.results.size() != 1 || call.results[0].kind != Kind::kTensor ||
      call.results[0].unknown_shape) {
    return absl::InvalidArgumentError(
        "a decomposed product's shape is not known");
  }
  TS_ASSIGN_OR_RETURN(formulas::Shape shape,
                      BindAll(call.results[0].dimensions, symbols));
  const formulas::ExactCount flops = 2 * formulas::ExactProduct(shape);
  if (flops.overflowed()) {
    return absl::OutOfRangeError("the product's FLOPs overflow");
  }
  return flops.value();
}

// The formula table's outcome; nullopt when the operator has no formula
// (recorded by name, as the fallback records such calls).
std::optional<absl::StatusOr<Count>> Evaluate(
    const CompiledGraphTally::Call& call,
    absl::Span<const std::int64_t> symbols) {
  if (call.decomposed_product) return EvaluateDecomposedProduct(call, symbols);
  if (call.info->formula == nullptr) return std::nullopt;
  return EvaluateWith(call.info->formula->formula, call, symbols);
}

// The elementwise convention's outcome for an operator the formula table
// does not count; nullopt when it has no rule either. A decomposed product
// has its own count (Evaluate's).
std::optional<absl::StatusOr<Count>> EvaluateElementwise(
    const CompiledGraphTally::Call& call,
    absl::Span<const std::int64_t> symbols) {
  if (call.decomposed_product || call.info->elementwise == nullptr) {
    return std::nullopt;
  }
  return EvaluateWith(call.info->elementwise->formula, call, symbols);
}

// NOTE [Masks in compiled code]
// A compiled graph's description has no tensor values, and the tally never
// reads any: an attention call with a mask tensor (or a mask the spec cannot
// show: flex attention's, a raw kernel's) is "not read" in the mask-aware
// count. A constant is_causal is in the description, so a causal call
// without a mask is counted as in eager code; a call without either is
// mask-aware as executed. The spec format is not changed.
void RecordCompiledAttentionMask(CountingSession& session,
                                 const CompiledGraphTally::Call& call,
                                 std::uint32_t scope,
                                 absl::Span<const std::int64_t> symbols,
                                 Count executed) {
  using RuleKind = AttentionMaskRule::Kind;
  const AttentionMaskRule& rule = *call.info->attention_mask;
  auto argument = [&](int index) -> const Value* {
    if (index < 0 || index >= static_cast<int>(call.arguments.size())) {
      return nullptr;
    }
    return &call.arguments[index];
  };
  // An integer argument's constant value; a symbol reads as nonzero.
  auto nonzero_int = [&](int index, bool negative_is_none) {
    const Value* value = argument(index);
    if (value == nullptr || value->kind != Kind::kInt) return false;
    const auto* constant = std::get_if<std::int64_t>(&value->dimensions.at(0));
    if (constant == nullptr) return true;
    return negative_is_none ? *constant >= 0 : *constant != 0;
  };
  const Value* causal_value = argument(rule.is_causal);
  const Value* mask = argument(rule.mask);
  const bool causal = causal_value != nullptr &&
                      causal_value->kind == Kind::kBool &&
                      causal_value->boolean;
  // A causal flag the description does not hold as a constant is unknown.
  const bool causal_unknown = causal_value != nullptr &&
                              causal_value->kind != Kind::kBool &&
                              causal_value->kind != Kind::kNone;
  const bool masked = rule.always_masked || causal_unknown ||
                      (mask != nullptr && mask->kind != Kind::kNone) ||
                      nonzero_int(rule.mask_type, false) ||
                      nonzero_int(rule.window_left, true) ||
                      nonzero_int(rule.window_right, true);
  if (!causal && !masked) return;
  if (rule.kind != RuleKind::kPairs || masked) {
    session.RecordMaskExclusionIn(
        *call.info, scope, executed,
        rule.always_masked
            ? "flex attention's block mask and score_mod are not read"
            : "compiled code: a mask's values are not read inside a "
              "compiled graph");
    return;
  }
  auto mask_aware = [&]() -> absl::StatusOr<Count> {
    const Value* query = argument(rule.query);
    const Value* key = argument(rule.key);
    if (query == nullptr || key == nullptr || query->kind != Kind::kTensor ||
        key->kind != Kind::kTensor || query->unknown_shape ||
        key->unknown_shape) {
      return absl::InvalidArgumentError("query or key shape unknown");
    }
    TS_ASSIGN_OR_RETURN(formulas::Shape q, BindAll(query->dimensions, symbols));
    TS_ASSIGN_OR_RETURN(formulas::Shape k, BindAll(key->dimensions, symbols));
    if (q.size() != 4 || k.size() != 4) {
      return absl::InvalidArgumentError("query and key are not 4-D");
    }
    TS_ASSIGN_OR_RETURN(Count per_head,
                        formulas::CausalAllowedPairs(q[2], k[2]));
    return formulas::MaskAwareFlops(executed, Count(q[0]) * q[1] * q[2] * k[2],
                                    Count(q[0]) * q[1] * per_head);
  }();
  if (mask_aware.ok()) {
    session.RecordMaskExclusionIn(*call.info, scope, executed - *mask_aware,
                                  "");
  } else {
    session.RecordMaskExclusionIn(*call.info, scope, executed,
                                  mask_aware.status().message());
  }
}

// A session's own formula cannot read a decomposed product: its values are
// the broadcast multiply's, not the product's (NOTE [Products that Inductor
// decomposed]).
absl::Status DecomposedProductError() {
  return absl::FailedPreconditionError(
      "Inductor decomposed this matrix product into a broadcast multiply, "
      "so the arguments its measurement's own formula needs are not known "
      "(count it eagerly, or compile with a larger product)");
}

// Records `call` with the session's own formula for its operator, in the
// fallback's order (call_recording.h): a custom C++ formula, else a deferred
// one. False when the session has neither for it.
bool RecordWithSessionFormula(CountingSession& session,
                              const CompiledGraphTally::Call& call,
                              std::uint32_t scope,
                              absl::Span<const std::int64_t> symbols,
                              Precision precision) {
  if (session.has_custom_formulas()) {
    if (const CustomFormula* custom = session.CustomFormulaFor(*call.info)) {
      const absl::StatusOr<Count> flops =
          call.decomposed_product ? DecomposedProductError()
                                  : EvaluateWith(*custom, call, symbols);
      if (flops.ok()) {
        session.RecordCountedIn(*call.info, scope, *flops, precision);
      } else {
        session.RecordFailedIn(*call.info, scope, flops.status());
      }
      return true;
    }
  }
  if (!session.has_deferred() || !session.IsDeferred(*call.info)) {
    return false;
  }
  const absl::Status recorded =
      call.decomposed_product
          ? DecomposedProductError()
          : RecordDeferredCall(session, call, scope, symbols, precision);
  if (!recorded.ok()) session.RecordFailedIn(*call.info, scope, recorded);
  return true;
}

const OperatorInfo& InfoForCall(const std::string& op,
                                const std::string& overload) {
  if (const OperatorInfo* info = OperatorInfoForName(op, overload)) {
    return *info;
  }
  // Higher-order operators, and operators of a library not loaded in this
  // process (a graph from a compilation cache): named, never silently zero.
  return SyntheticOperatorInfo(op, formulas::FindOperatorFormula(op), "");
}

// The tally's form of the spec call at `path`.
absl::StatusOr<CompiledGraphTally::Call> ToCall(SpecCall spec,
                                                const std::string& path) {
  CompiledGraphTally::Call call;
  call.info = &InfoForCall(spec.op, spec.overload);
  call.modules = std::move(spec.modules);
  TS_ASSIGN_OR_RETURN(
      call.arguments,
      ToValues(spec.arguments, report::MemberPath(path, "arguments")));
  TS_ASSIGN_OR_RETURN(
      call.results,
      ToValues(spec.results, report::MemberPath(path, "results")));
  call.decomposed_product = spec.form == CallForm::kDecomposedProduct;
  call.recomputed = spec.recomputed;
  bool symbolic = false;
  for (const Value& value : call.arguments) symbolic |= UsesSymbols(value);
  for (const Value& value : call.results) symbolic |= UsesSymbols(value);
  if (!symbolic) {
    call.constant_outcome = Evaluate(call, {});
    call.constant_elementwise_outcome = EvaluateElementwise(call, {});
  }
  return call;
}

// NOTE [Module labels of compiled code]
// Inductor's graph cache keys a graph by its code, not by where it was
// compiled: the same graph may have been traced from a compiled module
// (`self`), through torch.compile(module) (`fn`) or from a function that
// calls a global module, and its module stacks name their root accordingly.
// So the root's name is never used: in a compiled call that belongs to a
// module, every stack is below that module (`root_label`, the measurement's
// name for it); in a compiled function, a module the function reached is
// named by its type, as ModuleTracker names a module it has not seen named,
// and a stack whose root's type is not recorded gets no label.
std::optional<std::string> LabelOf(
    const CompiledGraphTally::ModuleEntry& entry,
    const std::vector<CompiledGraphTally::ModuleEntry>& stack,
    const std::string& root_label) {
  std::optional<std::string> base;
  if (!root_label.empty()) {
    base = root_label;
  } else {
    for (const auto& other : stack) {
      if (other.root == entry.root && other.path.empty()) base = other.type;
    }
  }
  if (!base || entry.path.empty()) return base;
  return absl::StrCat(*base, ".", entry.path);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CompiledGraphTally>> CompiledGraphTally::Parse(
    absl::string_view spec) {
  std::unique_ptr<CompiledGraphTally> tally(new CompiledGraphTally());
  if (absl::Status read = tally->Read(spec); !read.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("compiled graph ", read.message()));
  }
  return tally;
}

absl::Status CompiledGraphTally::Read(absl::string_view text) {
  TS_ASSIGN_OR_RETURN(CompiledGraphSpec spec, ReadCompiledGraphSpec(text));
  if (spec.version &&
      static_cast<std::int64_t>(*spec.version) != kSpecVersion) {
    // NOTE [Specs of another version] in compiled_graph_spec.cc.
    unseen_ = absl::StrCat(
        "this compiled graph was described by another release of "
        "torchscan_dispatch (spec version ",
        *spec.version, "; this library reads version ", kSpecVersion,
        "), so its FLOPs are missing");
    return absl::OkStatus();
  }
  family_ = std::move(spec.family);
  name_ = GraphName(family_, spec.graph);
  unseen_ = std::move(spec.unseen);
  bool symbolic = false;
  for (std::size_t i = 0; i < spec.calls.size(); ++i) {
    TS_ASSIGN_OR_RETURN(Call call, ToCall(std::move(spec.calls[i]),
                                          report::IndexPath("spec.calls", i)));
    has_recomputed_ |= call.recomputed;
    for (const Value& value : call.arguments) symbolic |= UsesSymbols(value);
    for (const Value& value : call.results) symbolic |= UsesSymbols(value);
    calls_.push_back(std::move(call));
  }
  TS_ASSIGN_OR_RETURN(inputs_, ToValues(spec.inputs, "spec.inputs"));
  TS_ASSIGN_OR_RETURN(outputs_, ToValues(spec.outputs, "spec.outputs"));
  for (const Value& value : inputs_) symbolic |= UsesSymbols(value);
  for (const Value& value : outputs_) symbolic |= UsesSymbols(value);
  if (!symbolic) constant_bytes_ = RunBytes({});
  return absl::OkStatus();
}

std::optional<report::CompiledRegionBytes> CompiledGraphTally::RunBytes(
    absl::Span<const std::int64_t> symbols) const {
  if (!unseen_.empty()) return std::nullopt;
  if (constant_bytes_) return constant_bytes_;
  report::CompiledRegionBytes run{.name = name_, .runs = 1};
  AddGraphValues(inputs_, symbols, run.inputs_read, run.unknown_values);
  AddGraphValues(outputs_, symbols, run.outputs_written, run.unknown_values);
  for (const Call& call : calls_) {
    const absl::StatusOr<CallBytes> bytes = DescribedCallBytes(call, symbols);
    if (bytes.ok()) {
      run.unfused += report::Count(bytes->read) + bytes->written;
    } else if (run.unfused_unknown_calls++ == 0) {
      run.unfused_unknown_message =
          absl::StrCat(call.info->report_name, ": ", bytes.status().message());
    }
  }
  return run;
}

std::uint32_t CompiledGraphTally::ModuleScopeOf(
    CountingSession& session, std::size_t index,
    const std::optional<std::string>& root_label) const {
  const std::uint32_t current = session.CurrentModuleScope();
  const auto key = std::make_tuple(session.serial(), current, root_label);
  {
    absl::MutexLock lock(&mu_);
    if (auto it = scope_cache_.find(key); it != scope_cache_.end()) {
      return it->second[index];
    }
  }
  std::vector<std::uint32_t> scopes;
  scopes.reserve(calls_.size());
  for (const Call& call : calls_) {
    // The frame's module runs for every call of the graph (its own entry is
    // in a stack only when the module was reached by a call inside the
    // frame, so a cached graph may or may not have it).
    std::vector<std::string> labels;
    if (root_label) {
      if (!root_label->empty()) labels.push_back(*root_label);
      for (const ModuleEntry& entry : call.modules) {
        if (std::optional<std::string> label =
                LabelOf(entry, call.modules, *root_label)) {
          labels.push_back(*std::move(label));
        }
      }
    }
    if (call.recomputed) labels.push_back(kRecomputeLabel);
    scopes.push_back(session.ModuleScopeWith(current, labels));
  }
  absl::MutexLock lock(&mu_);
  return scope_cache_.try_emplace(key, std::move(scopes)).first->second[index];
}

void CompiledGraphTally::Record(CountingSession& session,
                                absl::Span<const std::int64_t> symbols,
                                const std::optional<std::string>& root_label,
                                std::optional<c10::DeviceType> device) const {
  if (!unseen_.empty()) {
    session.RecordCall(SyntheticOperatorInfo(
        std::string(report::kCompiledGraphOperator), nullptr, unseen_));
  }
  if (std::optional<report::CompiledRegionBytes> run = RunBytes(symbols)) {
    // The lower bound belongs to the compiled module, as its calls do.
    const std::uint32_t scope =
        root_label && !root_label->empty()
            ? session.ModuleScopeWith(session.CurrentModuleScope(),
                                      {*root_label})
            : session.CurrentModuleScope();
    session.RecordCompiledGraph(
        SyntheticOperatorInfo(std::string(report::kCompiledGraphOperator),
                              nullptr, ""),
        scope, *run);
  }
  for (std::size_t i = 0; i < calls_.size(); ++i) {
    const Call& call = calls_[i];
    const std::uint32_t scope = root_label || has_recomputed_
                                    ? ModuleScopeOf(session, i, root_label)
                                    : session.CurrentModuleScope();
    if (call.info->is_communication()) {
      RecordCompiledCollective(session, call, symbols);
    }
    const Precision precision = DescribedPrecision(call, device);
    if (RecordWithSessionFormula(session, call, scope, symbols, precision)) {
      continue;
    }
    std::optional<absl::StatusOr<Count>> outcome =
        call.constant_outcome ? call.constant_outcome : Evaluate(call, symbols);
    if (!outcome && session.elementwise()) {
      // NOTE [Elementwise work in compiled graphs]
      // The rules apply to the operators the graph holds, after
      // AOTAutograd's and Inductor's decompositions: a layer norm or a
      // softmax there is already pointwise operators and reductions, each
      // counted by its own rule, so a compiled total may differ from the
      // eager one under this convention (docs/methodology.md).
      outcome = call.constant_elementwise_outcome
                    ? call.constant_elementwise_outcome
                    : EvaluateElementwise(call, symbols);
    }
    if (!outcome) {
      session.RecordCallIn(*call.info, scope);
    } else if (outcome->ok()) {
      session.RecordCountedIn(*call.info, scope, **outcome, precision);
      if (call.info->attention_mask.has_value()) {
        RecordCompiledAttentionMask(session, call, scope, symbols, **outcome);
      }
    } else {
      session.RecordFailedIn(*call.info, scope, outcome->status());
    }
  }
}

std::unique_ptr<CompiledGraphTally> CompiledGraphTally::Unreadable(
    absl::string_view error) {
  std::unique_ptr<CompiledGraphTally> tally(new CompiledGraphTally());
  tally->unseen_ = absl::StrCat(
      "torchscan_dispatch could not read this compiled graph's description (",
      error, "), so its FLOPs are missing");
  return tally;
}

// NOTE [A spec never breaks the workload]
// The spec is our own writing, so a spec we cannot read is our bug; but it
// runs inside the user's compiled code, where an exception would fail their
// step. An unreadable spec becomes a tally that records the graph as unseen
// work, naming the error, and the workload runs on.
const CompiledGraphTally& TallyFor(std::int64_t key, absl::string_view spec) {
  static absl::Mutex mu;
  // Keyed by the pass's hash of the spec; the spec itself is compared, so
  // two specs that share a key each get their own tally.
  static auto* tallies = new absl::flat_hash_map<
      std::int64_t, std::vector<std::pair<
                        std::string, std::unique_ptr<CompiledGraphTally>>>>();
  {
    absl::MutexLock lock(&mu);
    if (auto it = tallies->find(key); it != tallies->end()) {
      for (const auto& [text, tally] : it->second) {
        if (text == spec) return *tally;
      }
    }
  }
  absl::StatusOr<std::unique_ptr<CompiledGraphTally>> parsed =
      CompiledGraphTally::Parse(spec);
  std::unique_ptr<CompiledGraphTally> tally =
      parsed.ok() ? *std::move(parsed)
                  : CompiledGraphTally::Unreadable(parsed.status().message());
  absl::MutexLock lock(&mu);
  auto& entries = (*tallies)[key];
  for (const auto& [text, existing] : entries) {
    if (text == spec) return *existing;  // another thread parsed it first
  }
  entries.emplace_back(std::string(spec), std::move(tally));
  return *entries.back().second;
}

}  // namespace torchscan::dispatch
