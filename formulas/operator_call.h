// What an operator formula sees of one call: shapes and plain values, no
// tensors. Keeping formulas torch-free lets them be unit-tested in seconds
// against hand computations.

#ifndef TORCHSCAN_FORMULAS_OPERATOR_CALL_H_
#define TORCHSCAN_FORMULAS_OPERATOR_CALL_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "report/count.h"

namespace torchscan::formulas {

using report::Count;
using Shape = absl::InlinedVector<std::int64_t, 6>;

// One argument or result, reduced to what formulas may depend on.
struct OperatorValue {
  enum class Kind {
    kNone,        // None, or an undefined tensor
    kTensor,      // `shape` holds its sizes
    kInt,         // `integer`
    kBool,        // `boolean`
    kDouble,      // `real`
    kIntList,     // `integers`
    kBoolList,    // `booleans`
    kTensorList,  // `shapes`, one per tensor (undefined tensors: nullopt)
    kOther,       // anything else (strings, scalars types, devices, ...)
  };
  Kind kind = Kind::kOther;
  Shape shape;
  // Set when a tensor's sizes are symbolic or it has no strided sizes (nested
  // tensors); `shape` is then empty and formulas must not use it.
  bool shape_unknown = false;
  // The contents of a 1-D integer tensor, for the few formulas that need them
  // (sequence offsets of variable-length attention). Filled only for the
  // arguments a formula asks for, and only when the values can be read
  // without running the workload differently (not for meta or fake tensors).
  std::optional<std::vector<std::int64_t>> values;
  std::int64_t integer = 0;
  bool boolean = false;
  double real = 0;
  // NOTE [Inline int and bool lists]
  // Inline for the lists operators take (a convolution's stride, padding,
  // dilation and output padding; convolution_backward's output mask), so
  // that reducing a call's values allocates nothing for them (NOTE [The
  // counted path] in torchscan_dispatch/call_recording.h).
  absl::InlinedVector<std::int64_t, 6> integers;
  absl::InlinedVector<bool, 4> booleans;
  std::vector<std::optional<Shape>> shapes;

  static OperatorValue OfKind(Kind kind);
  static OperatorValue None() { return OfKind(Kind::kNone); }
  static OperatorValue Tensor(Shape shape);
  static OperatorValue UnknownShapeTensor();
  static OperatorValue Int(std::int64_t value);
  static OperatorValue Bool(bool value);
  static OperatorValue IntList(std::vector<std::int64_t> values);
  static OperatorValue BoolList(std::vector<bool> values);
  static OperatorValue Real(double value);

  bool is_tensor() const { return kind == Kind::kTensor; }
  bool is_none() const { return kind == Kind::kNone; }
};

// A finished call: arguments in schema order (every argument, defaults
// included), then the results.
struct OperatorCall {
  absl::Span<const OperatorValue> arguments;
  absl::Span<const OperatorValue> results;
};

// The tensor shape of argument `index`, or an error naming what is wrong.
absl::StatusOr<absl::Span<const std::int64_t>> TensorShapeAt(
    absl::Span<const OperatorValue> values, std::size_t index,
    absl::string_view role);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_OPERATOR_CALL_H_
