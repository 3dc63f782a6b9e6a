#ifndef PLUGINS_OPTIMIZERS_RMSPROP_RMSPROP_TF_EPSILON_H_
#define PLUGINS_OPTIMIZERS_RMSPROP_RMSPROP_TF_EPSILON_H_

// torch.optim.RMSprop with TensorFlow's epsilon: the denominator is
// sqrt(square_avg + eps) (centered: sqrt(square_avg - grad_avg^2 + eps))
// where torch's is sqrt(square_avg) + eps, as TensorFlow's RMSProp and
// timm's RMSpropTF (timm/optim/rmsprop_tf.py) put it. Everything else,
// the state and its serialization included, is torch's RMSprop, so a
// checkpoint holds the same fields either way.

#include <vector>

#include "torch/optim/rmsprop.h"

namespace pipeline {

class RmspropTfEpsilon : public torch::optim::RMSprop {
 public:
  using torch::optim::RMSprop::RMSprop;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace pipeline

#endif  // PLUGINS_OPTIMIZERS_RMSPROP_RMSPROP_TF_EPSILON_H_
