#ifndef PLUGINS_MODELS_SWIN_SHIFTED_WINDOW_ATTENTION_H_
#define PLUGINS_MODELS_SWIN_SHIFTED_WINDOW_ATTENTION_H_

#include <cstdint>

#include "torch/nn/module.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/linear.h"
#include "torch/nn/pimpl.h"
#include "torch/types.h"

namespace pipeline {

// torchvision's ShiftedWindowAttention (v1) and ShiftedWindowAttentionV2:
// multi-head self-attention inside square windows of a [B, H, W, C] map,
// the windows cyclically shifted by `shift_size` in every other block, with
// a bias for each relative position inside a window. The map is padded to
// whole windows (the padding attends and is attended to, as in
// torchvision) and cropped back; a window that covers the whole padded map
// is not shifted.
//
// v1 learns the bias as a table (relative_position_bias_table) and scales
// dot products by 1 / sqrt(head width). v2 uses cosine similarity scaled by
// a learned, clamped logit_scale per head, and computes the bias with a
// small MLP (cpb_mlp) over log-spaced relative coordinates
// (relative_coords_table, a buffer), squashed to 16 * sigmoid; its key bias
// is held at zero.
//
// Parameters and buffers carry torchvision's names and order: v1
// relative_position_bias_table, relative_position_index, qkv, proj; v2
// logit_scale, relative_coords_table, relative_position_index, qkv, proj,
// cpb_mlp. Initialisation is left to the model (torchvision's
// SwinTransformer re-initialises every Linear), except the bias table
// (truncated normal, std 0.02) and logit_scale (log 10), which no model
// pass touches.
class ShiftedWindowAttentionImpl : public torch::nn::Module {
 public:
  ShiftedWindowAttentionImpl(int64_t dim, int64_t window_size, int64_t shift_size,
                             int64_t num_heads, bool v2);

  torch::Tensor forward(const torch::Tensor& x);

 private:
  // The bias added to each head's attention logits: [1, heads, N, N] for
  // the N = window_size^2 tokens of a window.
  torch::Tensor RelativePositionBias();
  // Attention within each window of `windows` ([B * windows, N, C]), with
  // the shifted windows' `mask` ([windows, N, N]) where defined, projected.
  torch::Tensor Attend(const torch::Tensor& windows, const torch::Tensor& mask);

  int64_t window_size_;
  int64_t shift_size_;
  int64_t num_heads_;
  bool v2_;
  torch::Tensor relative_position_bias_table_;  // v1
  torch::Tensor logit_scale_;                   // v2
  torch::Tensor relative_coords_table_;         // v2
  torch::Tensor relative_position_index_;
  torch::nn::Linear qkv_{nullptr};
  torch::nn::Linear proj_{nullptr};
  torch::nn::Sequential cpb_mlp_{nullptr};  // v2
};
TORCH_MODULE(ShiftedWindowAttention);

// The additive mask that keeps the shifted windows' attention within the
// regions that were neighbours before the cyclic shift: 0 within a region,
// -100 across, [windows, N, N] for a padded_height x padded_width map, as
// torchvision builds it in shifted_window_attention.
torch::Tensor ShiftedWindowMask(int64_t padded_height, int64_t padded_width, int64_t window_size,
                                int64_t shift_height, int64_t shift_width,
                                const torch::TensorOptions& options);

}  // namespace pipeline

#endif  // PLUGINS_MODELS_SWIN_SHIFTED_WINDOW_ATTENTION_H_
