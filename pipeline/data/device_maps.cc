#include "pipeline/data/device_maps.h"

#include "ATen/ATen.h"

namespace pipeline {

at::Tensor ApplyChannelMaps(const at::Tensor& images, const std::vector<ChannelMap>& maps) {
  at::Tensor mapped = images.to(at::kFloat);
  const int64_t channels = mapped.size(1);
  auto value = [](const std::vector<float>& values, int64_t c) {
    return values.size() == 1 ? values[0] : values[c];
  };
  for (const ChannelMap& map : maps) {
    const bool same_for_all = map.multiply.size() == 1 && map.subtract.size() == 1 &&
                              map.divide.size() == 1;
    // Each channel's plane with its values as scalars: kernel arguments,
    // where tensors of the values would be copied to the device (and wait
    // for it) with every batch.
    for (int64_t c = 0; c < (same_for_all ? 1 : channels); ++c) {
      at::Tensor part = same_for_all ? mapped : mapped.select(1, c);
      part.mul_(value(map.multiply, c)).sub_(value(map.subtract, c)).div_(value(map.divide, c));
    }
  }
  return mapped;
}

at::Tensor FinishedImages(const Batch& batch, const at::Device& device) {
  if (batch.device_maps.empty()) return batch.images;
  return ApplyChannelMaps(batch.images.to(device, /*non_blocking=*/true), batch.device_maps);
}

}  // namespace pipeline
