#include "pipeline/util/simd.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace pipeline {
namespace {

bool CpuHasAvx2() {
#if PIPELINE_HAVE_AVX2_BUILD
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

SimdLevel DetectedLevel() {
  const char* requested = std::getenv("PIPELINE_SIMD");
  if (requested != nullptr && std::strcmp(requested, "baseline") == 0) return SimdLevel::kBaseline;
  return CpuHasAvx2() ? SimdLevel::kAvx2 : SimdLevel::kBaseline;
}

// -1: not decided yet; otherwise a SimdLevel.
std::atomic<int> active_level{-1};

}  // namespace

SimdLevel ActiveSimdLevel() {
  int level = active_level.load(std::memory_order_relaxed);
  if (level < 0) {
    level = static_cast<int>(DetectedLevel());
    active_level.store(level, std::memory_order_relaxed);
  }
  return static_cast<SimdLevel>(level);
}

const char* SimdLevelName(SimdLevel level) {
  return level == SimdLevel::kAvx2 ? "avx2" : "baseline";
}

void SetSimdLevelForTesting(SimdLevel level) {
  if (level == SimdLevel::kAvx2 && !CpuHasAvx2()) level = SimdLevel::kBaseline;
  active_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

}  // namespace pipeline
