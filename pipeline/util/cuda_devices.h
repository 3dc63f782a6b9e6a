#ifndef PIPELINE_UTIL_CUDA_DEVICES_H_
#define PIPELINE_UTIL_CUDA_DEVICES_H_

// Whether a config's CUDA device can be used here, with an error that says
// why not and what to change: a CPU-only build, a machine without a visible
// GPU, or an index past the last GPU.

#include <string>

#include "absl/status/status.h"

namespace pipeline {

// `field` names the option as the user wrote it (e.g. `device: "cuda:3"`);
// `index` is the CUDA device it asks for (-1: any, i.e. "cuda").
absl::Status CheckCudaDevice(const std::string& field, int index);

// The number of CUDA devices this process sees (0 in a CPU build).
int VisibleCudaDevices();

}  // namespace pipeline

#endif  // PIPELINE_UTIL_CUDA_DEVICES_H_
