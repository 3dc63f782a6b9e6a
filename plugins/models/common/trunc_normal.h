#ifndef PLUGINS_MODELS_COMMON_TRUNC_NORMAL_H_
#define PLUGINS_MODELS_COMMON_TRUNC_NORMAL_H_

#include "torch/types.h"

namespace pipeline {

// torch.nn.init.trunc_normal_ with mean 0, which LibTorch's C++ init lacks:
// fills `tensor` in place from a normal distribution of standard deviation
// `std` restricted to [low, high]. As in torch, the bounds are absolute, not
// in units of `std`, and low < 0 < high.
//
// The distribution is torch's, drawn another way: normal values, those out
// of bounds redrawn, instead of torch's inverse CDF, whose erfinv costs ten
// times more (ConvNeXt-Large's 198M weights took a minute). So a seeded run
// repeats itself, but its values are not those Python draws from the same
// seed.
void TruncNormal(torch::Tensor tensor, double std, double low = -2.0, double high = 2.0);

}  // namespace pipeline

#endif  // PLUGINS_MODELS_COMMON_TRUNC_NORMAL_H_
