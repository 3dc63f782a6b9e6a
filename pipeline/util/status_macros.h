#ifndef PIPELINE_UTIL_STATUS_MACROS_H_
#define PIPELINE_UTIL_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Propagates a non-OK absl::Status to the caller.
#define RETURN_IF_ERROR(expr)                                   \
  do {                                                          \
    ::absl::Status pipeline_status_ = (expr);                   \
    if (!pipeline_status_.ok()) return pipeline_status_;        \
  } while (0)

#define PIPELINE_CONCAT_INNER_(a, b) a##b
#define PIPELINE_CONCAT_(a, b) PIPELINE_CONCAT_INNER_(a, b)

// `ASSIGN_OR_RETURN(auto x, MakeX());` unwraps a StatusOr or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(PIPELINE_CONCAT_(pipeline_statusor_, __LINE__), lhs, expr)

#define ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                           \
  if (!statusor.ok()) return statusor.status();     \
  lhs = std::move(statusor).value()

#endif  // PIPELINE_UTIL_STATUS_MACROS_H_
