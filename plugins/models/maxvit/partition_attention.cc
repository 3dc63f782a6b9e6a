#include "plugins/models/maxvit/partition_attention.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "plugins/models/common/layer_norm.h"
#include "plugins/models/common/stochastic_depth.h"
#include "plugins/models/common/trunc_normal.h"
#include "torch/nn/modules/activation.h"
#include "torch/nn/modules/dropout.h"
#include "torch/nn/modules/normalization.h"

namespace pipeline {
namespace {

// torchvision's _get_relative_position_index for a size x size partition:
// [N, N] indices into the bias table, N = size^2 tokens row-major.
torch::Tensor RelativePositionIndex(int64_t size) {
  const torch::Tensor coords = torch::arange(size, torch::kInt64);
  const torch::Tensor flat =
      torch::stack(torch::meshgrid({coords, coords}, /*indexing=*/"ij")).flatten(1);
  torch::Tensor relative = (flat.unsqueeze(2) - flat.unsqueeze(1)).permute({1, 2, 0}).contiguous();
  relative.select(2, 0).add_(size - 1);
  relative.select(2, 1).add_(size - 1);
  relative.select(2, 0).mul_(2 * size - 1);
  return relative.sum(-1);
}

// [B, C, H, W] to [B, (H / p) * (W / p), p * p, C]: p x p tiles, as
// torchvision's WindowPartition.
torch::Tensor PartitionWindows(const torch::Tensor& x, int64_t p) {
  const int64_t b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  return x.reshape({b, c, h / p, p, w / p, p})
      .permute({0, 2, 4, 3, 5, 1})
      .reshape({b, (h / p) * (w / p), p * p, c});
}

// The inverse, WindowDepartition.
torch::Tensor DepartitionWindows(const torch::Tensor& x, int64_t p, int64_t h_partitions,
                                 int64_t w_partitions) {
  const int64_t b = x.size(0), c = x.size(3);
  return x.reshape({b, h_partitions, w_partitions, p, p, c})
      .permute({0, 5, 1, 3, 2, 4})
      .reshape({b, c, h_partitions * p, w_partitions * p});
}

}  // namespace

RelativePositionalAttentionImpl::RelativePositionalAttentionImpl(int64_t dim, int64_t head_dim,
                                                                 int64_t partition_size)
    : num_heads_(dim / head_dim),
      head_dim_(head_dim),
      tokens_(partition_size * partition_size),
      scale_(std::pow(static_cast<double>(dim), -0.5)) {
  to_qkv_ = register_module("to_qkv", torch::nn::Linear(dim, num_heads_ * head_dim_ * 3));
  merge_ = register_module("merge", torch::nn::Linear(num_heads_ * head_dim_, dim));
  const int64_t offsets = 2 * partition_size - 1;
  relative_position_bias_table_ = register_parameter(
      "relative_position_bias_table", torch::empty({offsets * offsets, num_heads_}));
  TruncNormal(relative_position_bias_table_, 0.02);
  relative_position_index_ =
      register_buffer("relative_position_index", RelativePositionIndex(partition_size));
}

torch::Tensor RelativePositionalAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t b = x.size(0), g = x.size(1), p = x.size(2), d = x.size(3);
  const std::vector<torch::Tensor> qkv = to_qkv_(x).chunk(3, -1);
  auto heads = [&](const torch::Tensor& t) {
    return t.reshape({b, g, p, num_heads_, head_dim_}).permute({0, 1, 3, 2, 4});
  };
  const torch::Tensor q = heads(qkv[0]);
  const torch::Tensor k = heads(qkv[1]) * scale_;
  const torch::Tensor v = heads(qkv[2]);
  const torch::Tensor dot = torch::einsum("B G H I D, B G H J D -> B G H I J", {q, k});
  const torch::Tensor bias = relative_position_bias_table_
                                 .index_select(0, relative_position_index_.view(-1))
                                 .view({tokens_, tokens_, -1})
                                 .permute({2, 0, 1})
                                 .contiguous()
                                 .unsqueeze(0);
  const torch::Tensor weights = torch::softmax(dot + bias, -1);
  const torch::Tensor out = torch::einsum("B G H I J, B G H J D -> B G H I D", {weights, v});
  return merge_(out.permute({0, 1, 3, 2, 4}).reshape({b, g, p, d}));
}

PartitionAttentionImpl::PartitionAttentionImpl(int64_t dim, int64_t head_dim,
                                               int64_t partition_size, Partition partition,
                                               int64_t mlp_ratio, double stochastic_depth_prob)
    : partition_size_(partition_size),
      partition_(partition),
      stochastic_depth_prob_(stochastic_depth_prob) {
  attn_layer_ = register_module(
      "attn_layer",
      torch::nn::Sequential(AutocastLayerNorm(torch::nn::LayerNormOptions({dim})),
                            RelativePositionalAttention(dim, head_dim, partition_size),
                            torch::nn::Dropout(0.0)));
  mlp_layer_ = register_module(
      "mlp_layer",
      torch::nn::Sequential(AutocastLayerNorm(torch::nn::LayerNormOptions({dim})),
                            torch::nn::Linear(dim, dim * mlp_ratio), torch::nn::GELU(),
                            torch::nn::Linear(dim * mlp_ratio, dim), torch::nn::Dropout(0.0)));
}

torch::Tensor PartitionAttentionImpl::forward(const torch::Tensor& x) {
  // A window takes p x p neighbours; the grid takes the p x p pixels that
  // lie map / p apart, by tiling with tiles of map / p and swapping the
  // tile and position axes.
  const int64_t side = x.size(2);
  const int64_t p = partition_ == Partition::kWindow ? partition_size_ : side / partition_size_;
  torch::Tensor tokens = PartitionWindows(x, p);
  if (partition_ == Partition::kGrid) tokens = tokens.swapaxes(-2, -3);
  tokens = tokens + StochasticDepth(attn_layer_->forward(tokens), stochastic_depth_prob_,
                                    is_training());
  tokens = tokens + StochasticDepth(mlp_layer_->forward(tokens), stochastic_depth_prob_,
                                    is_training());
  if (partition_ == Partition::kGrid) tokens = tokens.swapaxes(-2, -3);
  return DepartitionWindows(tokens, p, side / p, x.size(3) / p);
}

}  // namespace pipeline
