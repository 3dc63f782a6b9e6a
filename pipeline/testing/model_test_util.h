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

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_MODEL_TEST_UTIL_H_
