#include "pipeline/data/device_maps.h"

#include "ATen/ATen.h"

namespace pipeline {
namespace {

// One value per channel as a 1 x C x 1 x 1 tensor on `device`, or the single
// value for every channel as a scalar.
at::Tensor PerChannel(const std::vector<float>& values, const at::Device& device) {
  if (values.size() == 1) return at::scalar_tensor(values[0], at::kFloat).to(device);
  return at::tensor(values, at::kFloat)
      .view({1, static_cast<int64_t>(values.size()), 1, 1})
      .to(device, /*non_blocking=*/true);
}

}  // namespace

at::Tensor ApplyChannelMaps(const at::Tensor& images, const std::vector<ChannelMap>& maps) {
  at::Tensor mapped = images.to(at::kFloat);
  for (const ChannelMap& map : maps) {
    mapped.mul_(PerChannel(map.multiply, images.device()))
        .sub_(PerChannel(map.subtract, images.device()))
        .div_(PerChannel(map.divide, images.device()));
  }
  return mapped;
}

at::Tensor FinishedImages(const Batch& batch, const at::Device& device) {
  if (batch.device_maps.empty()) return batch.images;
  return ApplyChannelMaps(batch.images.to(device, /*non_blocking=*/true), batch.device_maps);
}

}  // namespace pipeline
