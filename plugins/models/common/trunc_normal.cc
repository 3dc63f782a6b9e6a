#include "plugins/models/common/trunc_normal.h"

#include <cmath>

#include "torch/utils.h"

namespace pipeline {
namespace {

double NormalCdf(double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; }

}  // namespace

void TruncNormal_(torch::Tensor tensor, double mean, double std, double a, double b) {
  torch::NoGradGuard no_grad;
  // Uniform over the CDF's values at the bounds, mapped back through the
  // inverse CDF: no rejection loop, and the same draws as torch's.
  const double low = NormalCdf((a - mean) / std);
  const double high = NormalCdf((b - mean) / std);
  tensor.uniform_(2 * low - 1, 2 * high - 1);
  tensor.erfinv_();
  tensor.mul_(std * std::sqrt(2.0));
  tensor.add_(mean);
  tensor.clamp_(a, b);
}

}  // namespace pipeline
