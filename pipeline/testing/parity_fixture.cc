#include "pipeline/testing/parity_fixture.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include "gtest/gtest.h"
#include "torch/utils.h"

namespace pipeline {
namespace testing {

torch::Tensor HashWave(int64_t n, int64_t seed) {
  torch::Tensor h = torch::bitwise_and(
      torch::arange(n, torch::kInt64) * int64_t{2654435761} + seed * 40503, int64_t{0xFFFFFFFF});
  for (int round = 0; round < 2; ++round) {
    h = torch::bitwise_xor(h, torch::bitwise_right_shift(h, 16));
    h = torch::bitwise_and(h * int64_t{0x45D9F3B}, int64_t{0xFFFFFFFF});
  }
  h = torch::bitwise_xor(h, torch::bitwise_right_shift(h, 16));
  return h.to(torch::kFloat64) / 2147483648.0 - 1.0;
}

void FillDeterministically(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  auto fill = [](const std::string& key, torch::Tensor tensor) {
    if (!tensor.is_floating_point()) return;
    int64_t key_sum = 0;
    for (unsigned char c : key) key_sum += c;
    const int64_t n = tensor.numel();
    const torch::Tensor wave = HashWave(n, key_sum);
    const std::string leaf = key.substr(key.rfind('.') + 1);
    torch::Tensor value;
    if (leaf == "running_var") {
      value = 1.0 + 0.5 * wave;
    } else if (leaf == "running_mean") {
      value = 0.02 * wave;
    } else if (tensor.dim() == 1 && leaf == "weight") {
      value = 1.0 + 0.2 * wave;
    } else if (tensor.dim() == 1) {
      value = 0.02 * wave;
    } else {
      value = wave * std::sqrt(6.0 / static_cast<double>(n / tensor.size(0)));
    }
    tensor.copy_(value.reshape(tensor.sizes()));
  };
  for (const auto& parameter : model.named_parameters()) fill(parameter.key(), parameter.value());
  for (const auto& buffer : model.named_buffers()) fill(buffer.key(), buffer.value());
}

torch::Tensor DeterministicInput(int64_t image_size) {
  return HashWave(2 * 3 * image_size * image_size, 1)
      .reshape({2, 3, image_size, image_size})
      .to(torch::kFloat32);
}

torch::Tensor ReadLogits(const std::string& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file.good()) << "cannot read " << path;
  std::vector<torch::Tensor> rows;
  std::string line;
  while (std::getline(file, line)) {
    std::istringstream fields(line);
    std::vector<double> row;
    for (double value; fields >> value;) row.push_back(value);
    rows.push_back(torch::tensor(row, torch::kFloat64));
  }
  return rows.empty() ? torch::Tensor() : torch::stack(rows).to(torch::kFloat32);
}

}  // namespace testing
}  // namespace pipeline
