// The bytes an operator call must read and write, torch-free: the rule,
// decided once per operator from its schema (DecideByteRule), and the bytes
// of one strided tensor (StridedTensorBytes). call_bytes.h applies them to a
// call's values. docs/methodology.md ("Bytes moved") states the rule with
// examples.

#ifndef TORCHSCAN_DISPATCH_BYTE_RULE_H_
#define TORCHSCAN_DISPATCH_BYTE_RULE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace torchscan::dispatch {

// What a schema says of one argument or result, as DecideByteRule reads it.
struct SchemaValueFacts {
  // A Tensor, Tensor?, Tensor[] or Tensor?[].
  bool holds_tensors = false;
  // Alias annotation: `Tensor(a)` (aliases) or `Tensor(a!)` (also writes).
  bool aliases = false;
  bool writes = false;
  // A keyword-only written argument: an `out=` destination.
  bool is_out = false;
  // The alias sets it names ("a" in `Tensor(a!)`), to pair a written
  // argument with the result that returns it.
  std::vector<std::string> alias_sets;
  // A result of type Scalar (`_local_scalar_dense`): it reads tensor data.
  bool is_scalar = false;
};

// How one argument's tensors count.
enum class ArgumentBytes : std::uint8_t {
  kNone,  // not a tensor, or the operator moves no bytes
  kRead,  // read once
  // Written and not returned (in-place `_foreach_add_`, which returns
  // nothing): written once, measured before the call; read too unless it is
  // an `out=` destination.
  kReadAndWritten,
  kWritten,
};

// How one result's tensors count.
enum class ResultBytes : std::uint8_t {
  kNone,     // not a tensor, or a view of an argument (written by no one)
  kWritten,  // a new tensor, or the written argument it returns (counted here)
};

// What one call moved: bytes read and written, or, with `unknown` set, why
// some of them cannot be known (a static string naming the cause; the
// known part is then a lower bound).
struct CallBytes {
  std::int64_t read = 0;
  std::int64_t written = 0;
  const char* unknown = nullptr;
};

// The rule for one operator, decided once (OperatorInfo::bytes).
struct ByteRule {
  // Set by DecideByteRule: an operator without a schema (or a synthetic one)
  // has no rule, and its calls' bytes are unknown.
  bool decided = false;
  // Views and metadata operators: the call moves nothing.
  bool moves_nothing = false;
  std::vector<ArgumentBytes> arguments;
  std::vector<ResultBytes> results;
};

// NOTE [The bytes rule]
// A call reads each distinct input tensor once and writes each output tensor
// once:
//  - an operator moves nothing when it has tensor results and every one is a
//    non-written alias of an argument (`Tensor(a)`: view, transpose, expand,
//    split), when it has no tensor result, writes no argument and returns no
//    Scalar (size, stride, is_contiguous, sym_numel; `equal` and
//    `is_nonzero`, which read data, are the named exceptions), and for
//    allocations that write nothing (empty, empty_like, empty_strided,
//    new_empty);
//  - an argument marked written (`Tensor(a!)`) is the call's destination: an
//    in-place destination is read and written, an `out=` destination only
//    written. A result returning it (`Tensor(a!)`) counts the write, measured
//    after the call (an out= destination may be resized); the argument
//    counts it when no result returns it;
//  - every other tensor argument is read, every other tensor result written.
// `packet` is the schema name ("aten::equal").
ByteRule DecideByteRule(absl::string_view packet,
                        absl::Span<const SchemaValueFacts> arguments,
                        absl::Span<const SchemaValueFacts> results);

// The bytes a strided tensor addresses: `itemsize` times the product of the
// sizes of the dimensions with a nonzero stride (an expanded dimension,
// stride 0, is one element however often it repeats), 0 when any size is 0.
// nullopt when the product overflows 63 bits or a size is negative.
std::optional<std::int64_t> StridedTensorBytes(
    std::int64_t itemsize, absl::Span<const std::int64_t> sizes,
    absl::Span<const std::int64_t> strides);

}  // namespace torchscan::dispatch

#endif  // TORCHSCAN_DISPATCH_BYTE_RULE_H_
