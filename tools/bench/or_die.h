#ifndef TOOLS_BENCH_OR_DIE_H_
#define TOOLS_BENCH_OR_DIE_H_

// The bench stops at its first error: a table measured with part of its
// setup missing would only mislead.

#include <cstdlib>
#include <iostream>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pipeline {
namespace bench {

[[noreturn]] inline void Die(const absl::Status& status) {
  std::cerr << "error: " << status.message() << "\n";
  std::exit(2);
}

template <typename T>
T OrDie(absl::StatusOr<T> value) {
  if (!value.ok()) Die(value.status());
  return std::move(*value);
}

}  // namespace bench
}  // namespace pipeline

#endif  // TOOLS_BENCH_OR_DIE_H_
