#ifndef PIPELINE_UTIL_SIMD_H_
#define PIPELINE_UTIL_SIMD_H_

// Runtime choice between a baseline (SSE2) and an AVX2 build of a pixel loop.
// The project compiles for baseline x86-64, so its binaries run anywhere;
// the few loops that carry a loader thread's time (resize, flip, the batch
// write) are compiled a second time for AVX2 and picked when the CPU has it.
//
// A loop is written once, as a PIPELINE_SIMD_INLINE function (template); two
// plain functions call it, one of them marked PIPELINE_TARGET_AVX2, and the
// caller picks one with UseAvx2(). Forced inlining is what makes the body be
// compiled for the caller's instruction set. AVX2 here does not include FMA,
// so no multiply-add is fused: both builds compute every value with the same
// IEEE operations in the same order, and give bitwise the same results.

namespace pipeline {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PIPELINE_HAVE_AVX2_BUILD 1
#define PIPELINE_TARGET_AVX2 __attribute__((target("avx2")))
#else
#define PIPELINE_HAVE_AVX2_BUILD 0
#define PIPELINE_TARGET_AVX2
#endif
#define PIPELINE_SIMD_INLINE inline __attribute__((always_inline))

enum class SimdLevel { kBaseline, kAvx2 };

// The level pixel loops run at: kAvx2 when the CPU supports it, unless the
// environment says PIPELINE_SIMD=baseline (read once, at the first call).
SimdLevel ActiveSimdLevel();
inline bool UseAvx2() { return ActiveSimdLevel() == SimdLevel::kAvx2; }

// "avx2" or "baseline", for logs and run records.
const char* SimdLevelName(SimdLevel level);

// Tests compare the two builds: forces `level` (kAvx2 only takes effect on a
// CPU that has it) until the next call. Not for use while loader threads run.
void SetSimdLevelForTesting(SimdLevel level);

}  // namespace pipeline

#endif  // PIPELINE_UTIL_SIMD_H_
