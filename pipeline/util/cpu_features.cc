#include "pipeline/util/cpu_features.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace pipeline {
namespace {

// oneDNN's ISA names (ONEDNN_MAX_CPU_ISA) under which its bf16 kernels
// still run: AVX512_CORE_BF16 and everything above it.
bool CapAllowsBf16(const std::string& cap) {
  const std::string upper = absl::AsciiStrToUpper(cap);
  return upper == "ALL" || upper == "AVX512_CORE_BF16" || upper == "AVX512_CORE_FP16" ||
         absl::StartsWith(upper, "AVX512_CORE_AMX") || absl::StartsWith(upper, "AVX10");
}

std::string OnednnMaxIsaFromEnvironment() {
  for (const char* name : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return value;
  }
  return "";
}

}  // namespace

CpuFeatures ParseCpuInfo(absl::string_view cpuinfo, std::string onednn_max_isa) {
  CpuFeatures cpu;
  cpu.onednn_max_isa = std::move(onednn_max_isa);
  for (absl::string_view line : absl::StrSplit(cpuinfo, '\n')) {
    // The first processor's entry ends at the first empty line.
    if (absl::StripAsciiWhitespace(line).empty()) {
      if (!cpu.model_name.empty() || cpu.family >= 0) break;
      continue;
    }
    const std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 1));
    if (parts.size() != 2) continue;
    const absl::string_view key = absl::StripAsciiWhitespace(parts[0]);
    const absl::string_view value = absl::StripAsciiWhitespace(parts[1]);
    if (key == "model name") {
      cpu.model_name = std::string(value);
    } else if (key == "cpu family") {
      if (!absl::SimpleAtoi(value, &cpu.family)) cpu.family = -1;
    } else if (key == "model") {
      if (!absl::SimpleAtoi(value, &cpu.model)) cpu.model = -1;
    } else if (key == "flags") {
      for (absl::string_view flag : absl::StrSplit(value, ' ', absl::SkipEmpty())) {
        if (flag == "avx2") cpu.avx2 = true;
        if (flag == "fma") cpu.fma = true;
        if (flag == "avx512f") cpu.avx512f = true;
        if (flag == "avx512_bf16") cpu.avx512_bf16 = true;
        if (flag == "amx_bf16") cpu.amx_bf16 = true;
      }
    }
  }
  return cpu;
}

const CpuFeatures& HostCpuFeatures() {
  static const CpuFeatures* const features = [] {
    std::ifstream file("/proc/cpuinfo");
    std::stringstream text;
    text << file.rdbuf();
    return new CpuFeatures(ParseCpuInfo(text.str(), OnednnMaxIsaFromEnvironment()));
  }();
  return *features;
}

Bf16Support CpuBf16Support(const CpuFeatures& cpu) {
  if (cpu.model_name.empty() && cpu.family < 0) {
    return {false, "an unknown CPU (/proc/cpuinfo names none), so float32"};
  }
  std::vector<std::string> native;
  if (cpu.avx512_bf16) native.push_back("AVX-512 BF16");
  if (cpu.amx_bf16) native.push_back("AMX-BF16");
  if (native.empty()) return {false, "no AVX-512 BF16 and no AMX-BF16"};
  if (!cpu.onednn_max_isa.empty() && !CapAllowsBf16(cpu.onednn_max_isa)) {
    return {false, absl::StrCat("its ", absl::StrJoin(native, " and "),
                                " capped off by ONEDNN_MAX_CPU_ISA=", cpu.onednn_max_isa)};
  }
  return {true, absl::StrJoin(native, ", ")};
}

std::string CpuDescription(const CpuFeatures& cpu) {
  const std::string name = cpu.model_name.empty() ? "an unknown CPU" : cpu.model_name;
  if (cpu.family < 0) return name;
  return absl::StrCat(name, " (family ", cpu.family, ", model ", cpu.model, ")");
}

std::string CpuIsaSummary(const CpuFeatures& cpu) {
  std::vector<std::string> present;
  if (cpu.avx2) present.push_back("AVX2");
  if (cpu.fma) present.push_back("FMA");
  if (cpu.avx512f) present.push_back("AVX-512");
  if (cpu.avx512_bf16) present.push_back("AVX-512 BF16");
  if (cpu.amx_bf16) present.push_back("AMX-BF16");
  return present.empty() ? "no AVX2" : absl::StrJoin(present, ", ");
}

}  // namespace pipeline
