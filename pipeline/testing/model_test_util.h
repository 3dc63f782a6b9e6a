#ifndef PIPELINE_TESTING_MODEL_TEST_UTIL_H_
#define PIPELINE_TESTING_MODEL_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "torch/nn/module.h"

namespace pipeline {
namespace testing {

// The shape of the model's parameter `key`; empty, with a test failure, when
// it has none.
inline std::vector<int64_t> ParameterShape(const torch::nn::Module& model,
                                           const std::string& key) {
  // named_parameters() returns a fresh dict: it must outlive the pointer
  // find() gives into it.
  const auto parameters = model.named_parameters();
  const torch::Tensor* parameter = parameters.find(key);
  if (parameter == nullptr) {
    ADD_FAILURE() << "no parameter " << key;
    return {};
  }
  return parameter->sizes().vec();
}

// Copies every parameter of `from` into the parameter of the same name of
// `to` (an identically built model), onto the device `to` keeps it on.
inline void CopyParameters(const torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  auto target = to.named_parameters();
  for (const auto& p : from.named_parameters()) {
    torch::Tensor& into = target[p.key()];
    into.copy_(p.value().to(into.device()));
  }
}

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_MODEL_TEST_UTIL_H_
