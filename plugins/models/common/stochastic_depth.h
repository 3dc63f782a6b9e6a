#ifndef PLUGINS_MODELS_COMMON_STOCHASTIC_DEPTH_H_
#define PLUGINS_MODELS_COMMON_STOCHASTIC_DEPTH_H_

#include "torch/types.h"

namespace pipeline {

// torchvision.ops.stochastic_depth in "row" mode: in training, zeroes a
// residual branch `x` for each image of the batch with probability `p` and
// scales the survivors by 1 / (1 - p), so its expectation is unchanged; the
// draws come from torch's generator, so a seeded run repeats them. Outside
// training, or at p = 0, `x` itself.
torch::Tensor StochasticDepth(const torch::Tensor& x, double p, bool training);

}  // namespace pipeline

#endif  // PLUGINS_MODELS_COMMON_STOCHASTIC_DEPTH_H_
