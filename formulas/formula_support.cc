#include "formulas/formula_support.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace torchscan::formulas {
namespace {

absl::StatusOr<const OperatorValue*> ValueAt(
    absl::Span<const OperatorValue> values, std::size_t index,
    absl::string_view role, absl::string_view kind) {
  if (index >= values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(role, " (", kind, " ", index, ") is missing"));
  }
  return &values[index];
}

// NOTE [Products on the counted path]
// Every counted call multiplies a few dimensions. Multiplying in the native
// 128-bit type here, with the overflow test the compiler inlines, costs a
// few instructions per factor; report::CheckedMultiply (the same test,
// out of line, through absl::int128 and std::optional) cost about 30.
bool MultiplyInto(__int128& product, __int128 factor) {
  return !__builtin_mul_overflow(product, factor, &product);
}

}  // namespace

absl::StatusOr<ShapeRef> ArgumentShape(const OperatorCall& call,
                                       std::size_t index,
                                       absl::string_view role) {
  return TensorShapeAt(call.arguments, index, role);
}

absl::StatusOr<ShapeRef> ResultShape(const OperatorCall& call,
                                     std::size_t index,
                                     absl::string_view role) {
  TS_ASSIGN_OR_RETURN(const OperatorValue* value,
                      ValueAt(call.results, index, role, "result"));
  if (!value->is_tensor()) {
    return absl::InvalidArgumentError(
        absl::StrCat(role, " (result ", index, ") is not a tensor"));
  }
  if (value->shape_unknown) {
    return absl::UnimplementedError(absl::StrCat(
        role, " has symbolic or nested sizes, which FLOP formulas cannot use"));
  }
  return ShapeRef(value->shape);
}

absl::StatusOr<const OperatorValue*> OptionalTensorArgument(
    const OperatorCall& call, std::size_t index, absl::string_view role) {
  TS_ASSIGN_OR_RETURN(const OperatorValue* value,
                      ValueAt(call.arguments, index, role, "argument"));
  if (value->is_none()) return nullptr;
  if (!value->is_tensor()) {
    return absl::InvalidArgumentError(
        absl::StrCat(role, " (argument ", index, ") is not a tensor"));
  }
  return value;
}

absl::StatusOr<bool> BoolArgument(const OperatorCall& call, std::size_t index,
                                  absl::string_view role) {
  TS_ASSIGN_OR_RETURN(const OperatorValue* value,
                      ValueAt(call.arguments, index, role, "argument"));
  if (value->kind != OperatorValue::Kind::kBool) {
    return absl::InvalidArgumentError(
        absl::StrCat(role, " (argument ", index, ") is not a bool"));
  }
  return value->boolean;
}

absl::StatusOr<absl::Span<const std::int64_t>> IntListArgument(
    const OperatorCall& call, std::size_t index, absl::string_view role) {
  TS_ASSIGN_OR_RETURN(const OperatorValue* value,
                      ValueAt(call.arguments, index, role, "argument"));
  if (value->kind != OperatorValue::Kind::kIntList) {
    return absl::InvalidArgumentError(absl::StrCat(
        role, " (argument ", index, ") is not a list of integers"));
  }
  return absl::Span<const std::int64_t>(value->integers);
}

absl::Status ExpectRank(ShapeRef shape, std::size_t rank,
                        absl::string_view what) {
  if (shape.size() == rank) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, " must be ", rank, "-D, got shape ", ShapeText(shape)));
}

absl::StatusOr<Count> Product(std::initializer_list<Count> factors) {
  __int128 product = 1;
  for (Count factor : factors) {
    if (!MultiplyInto(product, static_cast<__int128>(factor))) {
      return CountOverflowError();
    }
  }
  return Count(product);
}

absl::StatusOr<Count> ProductOf(ShapeRef dims) {
  std::optional<Count> product = ExactProductOf(dims);
  if (!product) return CountOverflowError();
  return *product;
}

std::optional<Count> ExactProductOf(ShapeRef dims) {
  __int128 product = 1;
  for (std::int64_t dim : dims) {
    if (!MultiplyInto(product, dim)) return std::nullopt;
  }
  return Count(product);
}

absl::Status CountOverflowError() {
  return absl::OutOfRangeError("FLOP count overflows 128 bits");
}

absl::StatusOr<Count> Sum(std::initializer_list<Count> terms) {
  Count sum = 0;
  for (Count term : terms) {
    std::optional<Count> next = report::CheckedAdd(sum, term);
    if (!next) return CountOverflowError();
    sum = *next;
  }
  return sum;
}

std::string ShapeText(ShapeRef shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace torchscan::formulas
