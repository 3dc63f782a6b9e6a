#ifndef PLUGINS_MODELS_COMMON_TRUNC_NORMAL_H_
#define PLUGINS_MODELS_COMMON_TRUNC_NORMAL_H_

#include "torch/types.h"

namespace pipeline {

// torch.nn.init.trunc_normal_, which LibTorch lacks: fills `tensor` from the
// normal distribution N(mean, std^2) truncated to [a, b] (absolute bounds,
// not multiples of std, as in torch), by the same inverse-CDF method. The
// transformers initialise with it at std 0.02, where the bounds never bite.
void TruncNormal_(torch::Tensor tensor, double mean, double std, double a = -2.0, double b = 2.0);

}  // namespace pipeline

#endif  // PLUGINS_MODELS_COMMON_TRUNC_NORMAL_H_
