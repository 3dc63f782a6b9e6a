#include "plugins/models/common/trunc_normal.h"

#include <cstdint>

#include "torch/csrc/autograd/grad_mode.h"

namespace pipeline {

void TruncNormal(torch::Tensor tensor, double std, double low, double high) {
  torch::NoGradGuard no_grad;
  tensor.normal_(0.0, std);
  // Redraws what fell outside until nothing does: each round keeps the
  // share of the mass within the bounds, so few rounds are needed.
  for (;;) {
    const torch::Tensor outside = tensor.lt(low).logical_or_(tensor.gt(high));
    const int64_t count = outside.sum().item<int64_t>();
    if (count == 0) return;
    tensor.masked_scatter_(outside, torch::empty({count}, tensor.options()).normal_(0.0, std));
  }
}

}  // namespace pipeline
