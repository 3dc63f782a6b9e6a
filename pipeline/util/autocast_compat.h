// Autocast's switches for one device type, on LibTorch 1.13 and 2.x alike.
//
// LibTorch 2.4 replaced the per-device functions (set_cpu_enabled,
// set_autocast_gpu_dtype, is_enabled for CUDA, ...) with ones that take the
// device type, and prints a deprecation warning on every call of the old
// ones: a bf16 run printed thousands of lines. 1.13 has only the old ones.
#ifndef PIPELINE_UTIL_AUTOCAST_COMPAT_H_
#define PIPELINE_UTIL_AUTOCAST_COMPAT_H_

#include "ATen/autocast_mode.h"
#include "c10/core/DeviceType.h"
#include "c10/core/ScalarType.h"
#include "pipeline/util/torch_version.h"

#if PIPELINE_TORCH_AT_LEAST(2, 4)
#define PIPELINE_AUTOCAST_BY_DEVICE_TYPE 1
#endif

namespace pipeline {

// `device` is at::kCPU or at::kCUDA, the two device types the runner trains on.
inline bool AutocastEnabled(at::DeviceType device) {
#ifdef PIPELINE_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::is_autocast_enabled(device);
#else
  return device == at::kCPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
#endif
}

inline void SetAutocastEnabled(at::DeviceType device, bool enabled) {
#ifdef PIPELINE_AUTOCAST_BY_DEVICE_TYPE
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == at::kCPU) {
    at::autocast::set_cpu_enabled(enabled);
  } else {
    at::autocast::set_enabled(enabled);
  }
#endif
}

inline at::ScalarType AutocastDtype(at::DeviceType device) {
#ifdef PIPELINE_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::get_autocast_dtype(device);
#else
  return device == at::kCPU ? at::autocast::get_autocast_cpu_dtype()
                            : at::autocast::get_autocast_gpu_dtype();
#endif
}

inline void SetAutocastDtype(at::DeviceType device, at::ScalarType dtype) {
#ifdef PIPELINE_AUTOCAST_BY_DEVICE_TYPE
  at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == at::kCPU) {
    at::autocast::set_autocast_cpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_gpu_dtype(dtype);
  }
#endif
}

}  // namespace pipeline

#endif  // PIPELINE_UTIL_AUTOCAST_COMPAT_H_
