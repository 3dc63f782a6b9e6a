// The key of a parameter's entry in a LibTorch optimizer's state, on
// LibTorch 1.13 and 2.x alike.
#ifndef PIPELINE_UTIL_OPTIMIZER_STATE_KEY_H_
#define PIPELINE_UTIL_OPTIMIZER_STATE_KEY_H_

#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

#include "torch/optim/optimizer.h"
#include "torch/types.h"

namespace pipeline {

// LibTorch keys an optimizer's state by the parameter's TensorImpl: as its
// address printed (1.13, c10::guts::to_string) or the pointer itself (2.x).
using OptimizerStateKey = typename std::remove_reference_t<
    decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;

template <typename Key = OptimizerStateKey>
Key OptimizerStateKeyOf(const at::Tensor& parameter) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;
    text << parameter.unsafeGetTensorImpl();
    return text.str();
  } else {
    return parameter.unsafeGetTensorImpl();
  }
}

}  // namespace pipeline

#endif  // PIPELINE_UTIL_OPTIMIZER_STATE_KEY_H_
