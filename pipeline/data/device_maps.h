#ifndef PIPELINE_DATA_DEVICE_MAPS_H_
#define PIPELINE_DATA_DEVICE_MAPS_H_

// The last step of a batch the loader left unfinished: its to_float /
// normalize maps (LoaderOptions::channel_maps_on_device) run on the device
// the model is on, after the uint8 batch has been copied there.

#include <vector>

#include "ATen/core/Tensor.h"
#include "pipeline/data/loader.h"

namespace pipeline {

// `images` (N x C x H x W uint8, on any device) as float32 with `maps`
// applied in order on that device: v -> (v * multiply - subtract) / divide
// per channel, the arithmetic of the loader's batch write (equal within
// float rounding: that write may fuse a multiply and a subtract).
at::Tensor ApplyChannelMaps(const at::Tensor& images, const std::vector<ChannelMap>& maps);

// `batch`'s images as the model takes them, on `device` when the loader
// left maps to apply there; otherwise the images as they are (the strategy
// moves them).
at::Tensor FinishedImages(const Batch& batch, const at::Device& device);

}  // namespace pipeline

#endif  // PIPELINE_DATA_DEVICE_MAPS_H_
