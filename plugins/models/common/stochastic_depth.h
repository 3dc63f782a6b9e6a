#ifndef PLUGINS_MODELS_COMMON_STOCHASTIC_DEPTH_H_
#define PLUGINS_MODELS_COMMON_STOCHASTIC_DEPTH_H_

#include "absl/status/status.h"
#include "torch/types.h"

namespace pipeline {

// torchvision.ops.stochastic_depth in "row" mode: in training, zeroes a
// residual branch `x` for each image (dimension 0) with probability `p` and
// scales the survivors by 1 / (1 - p), so its expectation is unchanged. The
// draws come from torch's generator, so a seeded run repeats them. Outside
// training, or at p = 0, `x` itself.
torch::Tensor StochasticDepth(const torch::Tensor& x, double p, bool training);

// Rejects a stochastic_depth_prob outside [0, 1] (NaN included), naming the
// field, as torchvision's stochastic_depth rejects its p.
absl::Status ValidateStochasticDepthProb(double probability);

}  // namespace pipeline

#endif  // PLUGINS_MODELS_COMMON_STOCHASTIC_DEPTH_H_
