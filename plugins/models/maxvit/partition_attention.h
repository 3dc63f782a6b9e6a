#ifndef PLUGINS_MODELS_MAXVIT_PARTITION_ATTENTION_H_
#define PLUGINS_MODELS_MAXVIT_PARTITION_ATTENTION_H_

#include <cstdint>

#include "torch/nn/module.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/linear.h"
#include "torch/nn/pimpl.h"
#include "torch/types.h"

namespace pipeline {

// torchvision's RelativePositionalMultiHeadAttention: self-attention over
// the P = partition_size^2 tokens of each group of a [B, G, P, D] tensor,
// with a learned bias for each relative position in the partition
// (relative_position_bias_table, indexed by the relative_position_index
// buffer). Keys are scaled by 1 / sqrt(D), the full width, as torchvision
// scales them.
class RelativePositionalAttentionImpl : public torch::nn::Module {
 public:
  RelativePositionalAttentionImpl(int64_t dim, int64_t head_dim, int64_t partition_size);

  torch::Tensor forward(const torch::Tensor& x);

 private:
  int64_t num_heads_;
  int64_t head_dim_;
  int64_t tokens_;
  double scale_;
  torch::nn::Linear to_qkv_{nullptr};
  torch::nn::Linear merge_{nullptr};
  torch::Tensor relative_position_bias_table_;
  torch::Tensor relative_position_index_;
};
TORCH_MODULE(RelativePositionalAttention);

// Where a PartitionAttentionLayer gathers its tokens from.
enum class Partition {
  kWindow,  // partition_size x partition_size neighbouring pixels
  kGrid,    // a partition_size x partition_size grid spread over the map
};

// torchvision's PartitionAttentionLayer: a pre-norm attention branch
// (attn_layer: LayerNorm, attention, Dropout) and a pre-norm MLP branch
// (mlp_layer: LayerNorm, Linear, GELU, Linear, Dropout; the dropouts at
// torchvision's default of 0), both residual and dropped by stochastic depth
// in training, over windows or a grid of a [B, C, H, W] map. The map's side must divide by partition_size (MaxVit
// checks that before its blocks run).
class PartitionAttentionImpl : public torch::nn::Module {
 public:
  PartitionAttentionImpl(int64_t dim, int64_t head_dim, int64_t partition_size,
                         Partition partition, int64_t mlp_ratio, double stochastic_depth_prob);

  torch::Tensor forward(const torch::Tensor& x);

 private:
  int64_t partition_size_;
  Partition partition_;
  double stochastic_depth_prob_;
  torch::nn::Sequential attn_layer_{nullptr};
  torch::nn::Sequential mlp_layer_{nullptr};
};
TORCH_MODULE(PartitionAttention);

}  // namespace pipeline

#endif  // PLUGINS_MODELS_MAXVIT_PARTITION_ATTENTION_H_
