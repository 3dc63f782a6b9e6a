// What differs between LibTorch 1.13's and 2.x's c10d, in one place.
//
// In 1.13 ProcessGroupGloo and ProcessGroupNCCL derive from
// c10d::ProcessGroup. In 2.x that class became a dispatcher over per-device
// c10d::Backend objects, and the Gloo and NCCL groups derive from Backend,
// which carries the collectives (allreduce, broadcast, allgather, barrier)
// with the signatures ProcessGroup had in 1.13. Holding the concrete group as
// a CollectiveGroup therefore works unchanged on both.
#ifndef PIPELINE_UTIL_C10D_COMPAT_H_
#define PIPELINE_UTIL_C10D_COMPAT_H_

#include "torch/csrc/distributed/c10d/ProcessGroupGloo.hpp"
#include "torch/csrc/distributed/c10d/TCPStore.hpp"
#include "pipeline/util/torch_version.h"

namespace pipeline {

#if PIPELINE_TORCH_AT_LEAST(2, 0)
using CollectiveGroup = ::c10d::Backend;
#else
using CollectiveGroup = ::c10d::ProcessGroup;
#endif

// Since 2.4 the TCPStore asks for its libuv backend by default, and builds
// without libuv (Debian's) then refuse to start ("use_libuv was requested
// but PyTorch was build without libuv support"); the classic backend is in
// every build.
inline void UseClassicStoreBackend(::c10d::TCPStoreOptions& options) {
#if PIPELINE_TORCH_AT_LEAST(2, 2)
  options.useLibUV = false;
#else
  (void)options;
#endif
}

}  // namespace pipeline

#endif  // PIPELINE_UTIL_C10D_COMPAT_H_
