#ifndef PLUGINS_MODELS_COMMON_TRUNCATED_NORMAL_H_
#define PLUGINS_MODELS_COMMON_TRUNCATED_NORMAL_H_

#include "torch/types.h"

namespace pipeline {

// torch.nn.init.trunc_normal_: fills `tensor` from the normal distribution
// N(mean, std^2) cut to [a, b] (absolute bounds, not multiples of std),
// drawn from torch's generator the way PyTorch draws it (a uniform sample
// through the inverse error function), so a seed gives the same weights on
// both sides. GoogLeNet and Inception v3 initialise their layers with it.
void TruncatedNormal_(torch::Tensor tensor, double mean, double std, double a, double b);

}  // namespace pipeline

#endif  // PLUGINS_MODELS_COMMON_TRUNCATED_NORMAL_H_
