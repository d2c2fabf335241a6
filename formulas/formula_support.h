// Small helpers shared by the operator formulas: typed access to a call's
// arguments and results, and overflow-checked products.

#ifndef TORCHSCAN_FORMULAS_FORMULA_SUPPORT_H_
#define TORCHSCAN_FORMULAS_FORMULA_SUPPORT_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "formulas/operator_call.h"

// Evaluates `expr` (an absl::StatusOr); returns its error, or assigns its
// value to `lhs`.
#define TS_ASSIGN_OR_RETURN(lhs, expr) \
  TS_ASSIGN_OR_RETURN_IMPL(TS_CONCAT(status_or_, __LINE__), lhs, expr)
#define TS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = *std::move(tmp)
// Returns `expr` (an absl::Status) when it is an error.
#define TS_RETURN_IF_ERROR(expr)                        \
  do {                                                  \
    if (absl::Status status_ = (expr); !status_.ok()) { \
      return status_;                                   \
    }                                                   \
  } while (false)
#define TS_CONCAT(a, b) TS_CONCAT_IMPL(a, b)
#define TS_CONCAT_IMPL(a, b) a##b

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
absl::StatusOr<std::int64_t> IntArgument(const OperatorCall& call,
                                         std::size_t index,
                                         absl::string_view role);

// `shape` must have exactly `rank` dimensions.
absl::Status ExpectRank(ShapeRef shape, std::size_t rank,
                        absl::string_view what);

// The exact product, or an out-of-range error (never a wrapped number).
absl::StatusOr<Count> Product(std::initializer_list<Count> factors);
absl::StatusOr<Count> ProductOf(ShapeRef dims);
absl::StatusOr<Count> Sum(std::initializer_list<Count> terms);

std::string ShapeText(ShapeRef shape);

}  // namespace torchscan::formulas

#endif  // TORCHSCAN_FORMULAS_FORMULA_SUPPORT_H_
