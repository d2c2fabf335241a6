// Status propagation, abseil style.
//
//   TS_RETURN_IF_ERROR(CheckShape(shape));
//   TS_ASSIGN_OR_RETURN(const Json* layers, object.Member("layers"));
//
// TS_RETURN_IF_ERROR returns the absl::Status `expr` evaluates to when it is
// an error. TS_ASSIGN_OR_RETURN evaluates an absl::StatusOr: it returns the
// error, or moves the value into `lhs`, which may declare a variable. Both
// work in functions returning absl::Status or any absl::StatusOr<T>.

#ifndef TORCHSCAN_BASE_STATUS_MACROS_H_
#define TORCHSCAN_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"

#define TS_RETURN_IF_ERROR(expr)                                \
  do {                                                          \
    if (::absl::Status ts_status_ = (expr); !ts_status_.ok()) { \
      return ts_status_;                                        \
    }                                                           \
  } while (false)

#define TS_ASSIGN_OR_RETURN(lhs, expr)                                       \
  TS_ASSIGN_OR_RETURN_IMPL_(TS_STATUS_CONCAT_(ts_status_or_, __LINE__), lhs, \
                            expr)

// Internal to the macros above.
#define TS_ASSIGN_OR_RETURN_IMPL_(status_or, lhs, expr)      \
  auto status_or = (expr);                                   \
  if (!status_or.ok()) return std::move(status_or).status(); \
  lhs = *std::move(status_or)
#define TS_STATUS_CONCAT_(a, b) TS_STATUS_CONCAT_IMPL_(a, b)
#define TS_STATUS_CONCAT_IMPL_(a, b) a##b

#endif  // TORCHSCAN_BASE_STATUS_MACROS_H_
