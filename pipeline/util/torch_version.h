// The LibTorch a binary was compiled against: run_info.jsonl and --version
// report it, and code that must differ between LibTorch generations asks
// here (c10d_compat.h and autocast_compat.h hold those differences).
#ifndef PIPELINE_UTIL_TORCH_VERSION_H_
#define PIPELINE_UTIL_TORCH_VERSION_H_

#include "torch/version.h"

// For #if: the LibTorch compiled against is MAJOR.MINOR or later.
#define PIPELINE_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||           \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace pipeline {

inline constexpr const char kLibTorchVersion[] = TORCH_VERSION;

// True when this binary was linked against a CUDA LibTorch (--config=cuda).
inline constexpr bool kCudaBuild =
#ifdef PIPELINE_CUDA
    true;
#else
    false;
#endif

}  // namespace pipeline

#endif  // PIPELINE_UTIL_TORCH_VERSION_H_
