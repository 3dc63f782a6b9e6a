#ifndef PIPELINE_UTIL_TORCH_STATUS_H_
#define PIPELINE_UTIL_TORCH_STATUS_H_

#include <exception>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace pipeline {

// LibTorch reports errors as exceptions (c10::Error derives from
// std::exception). They are turned into a Status once, at the boundary where a
// plugin or the trainer calls into LibTorch, with `what` saying which call it
// was. c10::Error's message carries a C++ backtrace after the first line; only
// the first line is kept, since users need the reason, not our stack.
std::string FirstLineOf(const std::string& message);

template <typename Fn>
auto CallTorch(const std::string& what, Fn&& fn) {
  using R = std::invoke_result_t<Fn>;
  using Out = std::conditional_t<std::is_void_v<R>, absl::Status,
                                 std::conditional_t<std::is_same_v<R, absl::Status>,
                                                    absl::Status, absl::StatusOr<R>>>;
  try {
    if constexpr (std::is_void_v<R>) {
      fn();
      return Out(absl::OkStatus());
    } else {
      return Out(fn());
    }
  } catch (const std::exception& e) {
    return Out(absl::InternalError(absl::StrCat(what, ": ", FirstLineOf(e.what()))));
  }
}

}  // namespace pipeline

#endif  // PIPELINE_UTIL_TORCH_STATUS_H_
