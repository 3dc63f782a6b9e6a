#include "plugins/models/common/truncated_normal.h"

#include <cmath>

namespace pipeline {
namespace {

// The standard normal distribution's cumulative distribution function.
double NormalCdf(double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; }

}  // namespace

void TruncatedNormal_(torch::Tensor tensor, double mean, double std, double a, double b) {
  torch::NoGradGuard no_grad;
  // Uniform between the bounds' CDF values, mapped to [-1, 1] and back
  // through erfinv: PyTorch's steps, in its order.
  const double low = NormalCdf((a - mean) / std);
  const double high = NormalCdf((b - mean) / std);
  tensor.uniform_(2 * low - 1, 2 * high - 1);
  tensor.erfinv_();
  tensor.mul_(std * std::sqrt(2.0));
  tensor.add_(mean);
  tensor.clamp_(a, b);
}

}  // namespace pipeline
