// Small helpers shared by the operator formulas: typed access to a call's
// arguments and results, and overflow-checked products.

#ifndef TORCHSCAN_FORMULAS_FORMULA_SUPPORT_H_
#define TORCHSCAN_FORMULAS_FORMULA_SUPPORT_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "formulas/operator_call.h"

namespace torchscan::formulas {

using ShapeRef = absl::Span<const std::int64_t>;

// The shape of tensor argument `index`.
absl::StatusOr<ShapeRef> ArgumentShape(const OperatorCall& call,
                                       std::size_t index,
                                       absl::string_view role);
// The shape of tensor result `index`.
absl::StatusOr<ShapeRef> ResultShape(const OperatorCall& call,
                                     std::size_t index, absl::string_view role);
// Argument `index` when it is an optional tensor: nullptr for None.
absl::StatusOr<const OperatorValue*> OptionalTensorArgument(
    const OperatorCall& call, std::size_t index, absl::string_view role);
absl::StatusOr<bool> BoolArgument(const OperatorCall& call, std::size_t index,
                                  absl::string_view role);
// Argument `index` when it is a list of integers (a pooling's kernel size).
absl::StatusOr<absl::Span<const std::int64_t>> IntListArgument(
    const OperatorCall& call, std::size_t index, absl::string_view role);

// `shape` must have exactly `rank` dimensions.
absl::Status ExpectRank(ShapeRef shape, std::size_t rank,
                        absl::string_view what);

// The exact product, or an out-of-range error (never a wrapped number).
absl::StatusOr<Count> Product(std::initializer_list<Count> factors);
absl::StatusOr<Count> ProductOf(ShapeRef dims);
absl::StatusOr<Count> Sum(std::initializer_list<Count> terms);
// ProductOf without a Status, for the typed entry points (NOTE [Typed matrix
// products] in matmul_formulas.cc): nothing where ProductOf is an error.
std::optional<Count> ExactProductOf(ShapeRef dims);
// The error of a count that does not fit (Product's, ProductOf's, Sum's).
absl::Status CountOverflowError();

std::string ShapeText(ShapeRef shape);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_FORMULA_SUPPORT_H_
