#include "plugins/models/common/stochastic_depth.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"

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

absl::Status ValidateStochasticDepthProb(double probability) {
  // Written to also reject NaN.
  if (!(probability >= 0 && probability <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("stochastic_depth_prob: ", probability,
                     " is not a probability; choose a value from 0 to 1"));
  }
  return absl::OkStatus();
}

}  // namespace pipeline
