#include "plugins/models/common/stochastic_depth.h"

#include <cstdint>
#include <vector>

namespace pipeline {

torch::Tensor StochasticDepth(const torch::Tensor& x, double p, bool training) {
  if (!training || p == 0.0) return x;
  const double survival = 1.0 - p;
  std::vector<int64_t> size(x.dim(), 1);
  size[0] = x.size(0);
  torch::Tensor keep = torch::empty(size, x.options()).bernoulli_(survival);
  if (survival > 0.0) keep.div_(survival);
  return x * keep;
}

}  // namespace pipeline
