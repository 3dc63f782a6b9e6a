#include "plugins/models/swin/shifted_window_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>

#include "plugins/models/common/trunc_normal.h"
#include "torch/nn/functional/normalization.h"
#include "torch/nn/modules/activation.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

// The index into the bias table of each (query, key) pair of a window's
// tokens, row-major over the window: torchvision's relative_position_index,
// flattened to [N * N].
torch::Tensor RelativePositionIndex(int64_t window_size) {
  const torch::Tensor coords_h = torch::arange(window_size, torch::kInt64);
  const torch::Tensor coords_w = torch::arange(window_size, torch::kInt64);
  const torch::Tensor coords =
      torch::stack(torch::meshgrid({coords_h, coords_w}, /*indexing=*/"ij"));  // 2, Wh, Ww
  const torch::Tensor flat = coords.flatten(1);                               // 2, N
  torch::Tensor relative = (flat.unsqueeze(2) - flat.unsqueeze(1)).permute({1, 2, 0}).contiguous();
  relative.select(2, 0).add_(window_size - 1);  // from 0
  relative.select(2, 1).add_(window_size - 1);
  relative.select(2, 0).mul_(2 * window_size - 1);
  return relative.sum(-1).flatten();
}

// v2's inputs to cpb_mlp: every relative offset in a window, scaled to
// [-8, 8] and log-spaced, [1, 2W - 1, 2W - 1, 2]. The float32 operations are
// torchvision's, in its order, so the table is the same to the last bit.
torch::Tensor RelativeCoordsTable(int64_t window_size) {
  const torch::Tensor offsets = torch::arange(-(window_size - 1), window_size, torch::kFloat32);
  torch::Tensor table = torch::stack(torch::meshgrid({offsets, offsets}, /*indexing=*/"ij"))
                            .permute({1, 2, 0})
                            .contiguous()
                            .unsqueeze(0);
  table.select(3, 0).div_(window_size - 1);
  table.select(3, 1).div_(window_size - 1);
  table.mul_(8);
  return torch::sign(table) * torch::log2(torch::abs(table) + 1.0) / 3.0;
}

// [start, stop) of a Python slice start:stop (stop nullopt for "to the
// end") over `length` elements: negative bounds count from the end, and
// both are clamped to the range.
std::pair<int64_t, int64_t> PythonSlice(int64_t start, std::optional<int64_t> stop,
                                        int64_t length) {
  auto resolve = [length](int64_t bound) {
    return std::clamp<int64_t>(bound < 0 ? bound + length : bound, 0, length);
  };
  return {resolve(start), stop.has_value() ? resolve(*stop) : length};
}

}  // namespace

ShiftedWindowAttentionImpl::ShiftedWindowAttentionImpl(int64_t dim, int64_t window_size,
                                                       int64_t shift_size, int64_t num_heads,
                                                       bool v2)
    : window_size_(window_size), shift_size_(shift_size), num_heads_(num_heads), v2_(v2) {
  qkv_ = register_module("qkv", torch::nn::Linear(dim, dim * 3));
  proj_ = register_module("proj", torch::nn::Linear(dim, dim));
  const int64_t table_size = (2 * window_size - 1) * (2 * window_size - 1);
  if (v2_) {
    logit_scale_ =
        register_parameter("logit_scale", torch::log(10 * torch::ones({num_heads, 1, 1})));
    cpb_mlp_ = register_module(
        "cpb_mlp",
        torch::nn::Sequential(torch::nn::Linear(2, 512), torch::nn::ReLU(),
                              torch::nn::Linear(torch::nn::LinearOptions(512, num_heads).bias(false))));
    relative_coords_table_ =
        register_buffer("relative_coords_table", RelativeCoordsTable(window_size));
  } else {
    relative_position_bias_table_ = register_parameter(
        "relative_position_bias_table", torch::zeros({table_size, num_heads}));
    TruncNormal(relative_position_bias_table_, 0.02);
  }
  relative_position_index_ =
      register_buffer("relative_position_index", RelativePositionIndex(window_size));
}

torch::Tensor ShiftedWindowAttentionImpl::RelativePositionBias() {
  const torch::Tensor table =
      v2_ ? cpb_mlp_->forward(relative_coords_table_).view({-1, num_heads_})
          : relative_position_bias_table_;
  const int64_t n = window_size_ * window_size_;
  torch::Tensor bias = table.index_select(0, relative_position_index_).view({n, n, -1});
  bias = bias.permute({2, 0, 1}).contiguous().unsqueeze(0);
  return v2_ ? 16 * torch::sigmoid(bias) : bias;
}

torch::Tensor ShiftedWindowAttentionImpl::Attend(const torch::Tensor& windows,
                                                 const torch::Tensor& mask) {
  const int64_t count = windows.size(0);
  const int64_t tokens = windows.size(1);
  const int64_t channels = windows.size(2);
  torch::Tensor qkv_bias = qkv_->bias;
  if (v2_) {
    // v2 has no key bias: its third of qkv's bias is ignored, whatever it
    // holds.
    qkv_bias = qkv_bias.clone();
    qkv_bias.narrow(0, channels, channels).zero_();
  }
  const torch::Tensor qkv = torch::linear(windows, qkv_->weight, qkv_bias)
                                .reshape({count, tokens, 3, num_heads_, channels / num_heads_})
                                .permute({2, 0, 3, 1, 4});
  torch::Tensor q = qkv[0];
  const torch::Tensor k = qkv[1];
  const torch::Tensor v = qkv[2];
  torch::Tensor attention;
  if (v2_) {
    namespace F = torch::nn::functional;
    const F::NormalizeFuncOptions last_dim = F::NormalizeFuncOptions().dim(-1);
    attention = F::normalize(q, last_dim).matmul(F::normalize(k, last_dim).transpose(-2, -1));
    attention = attention * torch::clamp_max(logit_scale_, std::log(100.0)).exp();
  } else {
    q = q * std::pow(static_cast<double>(channels / num_heads_), -0.5);
    attention = q.matmul(k.transpose(-2, -1));
  }
  attention = attention + RelativePositionBias();
  if (mask.defined()) {
    const int64_t num_windows = mask.size(0);
    attention = attention.view({count / num_windows, num_windows, num_heads_, tokens, tokens}) +
                mask.unsqueeze(1).unsqueeze(0);
    attention = attention.view({-1, num_heads_, tokens, tokens});
  }
  attention = torch::softmax(attention, -1);
  const torch::Tensor out = attention.matmul(v).transpose(1, 2).reshape({count, tokens, channels});
  return proj_->forward(out);
}

torch::Tensor ShiftedWindowAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t batch = x.size(0), height = x.size(1), width = x.size(2), channels = x.size(3);
  const int64_t w = window_size_;
  const int64_t pad_right = (w - width % w) % w;
  const int64_t pad_bottom = (w - height % w) % w;
  torch::Tensor padded = torch::constant_pad_nd(x, {0, 0, 0, pad_right, 0, pad_bottom});
  const int64_t padded_height = padded.size(1), padded_width = padded.size(2);
  // A window as large as the map sees all of it already.
  const int64_t shift_height = w >= padded_height ? 0 : shift_size_;
  const int64_t shift_width = w >= padded_width ? 0 : shift_size_;
  const bool shifted = shift_height + shift_width > 0;
  if (shifted) padded = torch::roll(padded, {-shift_height, -shift_width}, {1, 2});

  const int64_t rows = padded_height / w, columns = padded_width / w;
  const torch::Tensor windows = padded.view({batch, rows, w, columns, w, channels})
                                    .permute({0, 1, 3, 2, 4, 5})
                                    .reshape({batch * rows * columns, w * w, channels});
  const torch::Tensor mask =
      shifted ? ShiftedWindowMask(padded_height, padded_width, w, shift_height, shift_width,
                                  windows.options())
              : torch::Tensor();
  torch::Tensor out = Attend(windows, mask)
                          .view({batch, rows, columns, w, w, channels})
                          .permute({0, 1, 3, 2, 4, 5})
                          .reshape({batch, padded_height, padded_width, channels});
  if (shifted) out = torch::roll(out, {shift_height, shift_width}, {1, 2});
  return out.slice(1, 0, height).slice(2, 0, width).contiguous();
}

torch::Tensor ShiftedWindowMask(int64_t padded_height, int64_t padded_width, int64_t window_size,
                                int64_t shift_height, int64_t shift_width,
                                const torch::TensorOptions& options) {
  torch::NoGradGuard no_grad;
  const int64_t w = window_size;
  // torchvision's slices: the map less its last window, the last window
  // less the shifted-in strip, the strip. With a shift of 0 the middle one
  // is empty and the last is everything, as in Python.
  const std::pair<int64_t, std::optional<int64_t>> h_slices[] = {
      {0, -w}, {-w, -shift_height}, {-shift_height, std::nullopt}};
  const std::pair<int64_t, std::optional<int64_t>> w_slices[] = {
      {0, -w}, {-w, -shift_width}, {-shift_width, std::nullopt}};
  torch::Tensor mask = torch::zeros({padded_height, padded_width}, options);
  int64_t count = 0;
  for (const auto& [h_start, h_stop] : h_slices) {
    for (const auto& [w_start, w_stop] : w_slices) {
      const auto [top, bottom] = PythonSlice(h_start, h_stop, padded_height);
      const auto [left, right] = PythonSlice(w_start, w_stop, padded_width);
      if (bottom > top && right > left) {
        mask.slice(0, top, bottom).slice(1, left, right).fill_(count);
      }
      ++count;
    }
  }
  const int64_t num_windows = (padded_height / w) * (padded_width / w);
  mask = mask.view({padded_height / w, w, padded_width / w, w})
             .permute({0, 2, 1, 3})
             .reshape({num_windows, w * w});
  mask = mask.unsqueeze(1) - mask.unsqueeze(2);
  return mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0);
}

}  // namespace pipeline
