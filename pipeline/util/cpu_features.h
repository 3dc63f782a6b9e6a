#ifndef PIPELINE_UTIL_CPU_FEATURES_H_
#define PIPELINE_UTIL_CPU_FEATURES_H_

// What this CPU computes natively, as far as the choice of training
// precision is concerned. bfloat16 is fast only where the CPU has bf16
// instructions (AVX-512 BF16, AMX-BF16): elsewhere oneDNN runs bf16
// convolutions through reference kernels, over 100x slower than float32,
// and says nothing. The facts come from /proc/cpuinfo (the flags the kernel
// enables, so a CPU whose AMX state the OS does not allow shows none), and a
// cap on oneDNN's instruction set (ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA)
// is honoured as oneDNN honours it: kernels above the cap are never used.

#include <string>
#include "absl/strings/string_view.h"

namespace pipeline {

struct CpuFeatures {
  // "AMD EPYC 9B45", or "" when /proc/cpuinfo has no model name.
  std::string model_name;
  int family = -1, model = -1;  // -1: not given
  bool avx2 = false, fma = false, avx512f = false, avx512_bf16 = false, amx_bf16 = false;
  // The value of ONEDNN_MAX_CPU_ISA (or DNNL_MAX_CPU_ISA), "" when unset.
  std::string onednn_max_isa;
};

// The first processor's entry of a /proc/cpuinfo text; `onednn_max_isa`
// as the environment would give it.
CpuFeatures ParseCpuInfo(absl::string_view cpuinfo, std::string onednn_max_isa);

// This machine's, read once.
const CpuFeatures& HostCpuFeatures();

// Whether bf16 arithmetic runs natively, and in words why (or why not).
struct Bf16Support {
  bool native = false;
  // "AVX-512 BF16" / "AMX-BF16" when native; otherwise what is missing:
  // "no AVX-512 BF16 and no AMX-BF16", the oneDNN cap that hides them, or
  // that the CPU is unknown (no /proc/cpuinfo entry to read).
  std::string detail;
};
Bf16Support CpuBf16Support(const CpuFeatures& cpu);

// "AMD EPYC 9B45 (family 26, model 2)", "an unknown CPU" without a name.
std::string CpuDescription(const CpuFeatures& cpu);

// The vector instruction sets that matter for training, in words:
// "AVX2, FMA, AVX-512, AVX-512 BF16, AMX-BF16" (those present).
std::string CpuIsaSummary(const CpuFeatures& cpu);

}  // namespace pipeline

#endif  // PIPELINE_UTIL_CPU_FEATURES_H_
