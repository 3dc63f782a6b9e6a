#include "pipeline/util/cpu_features.h"

#include "gtest/gtest.h"

namespace pipeline {
namespace {

// Abridged /proc/cpuinfo entries of the three CPUs this kind of machine has
// been seen with (flags cut to the ones that matter, plus neighbours).
constexpr char kZen3[] = R"(processor	: 0
vendor_id	: AuthenticAMD
cpu family	: 25
model		: 1
model name	: AMD EPYC 7B13
flags		: fpu sse sse2 avx fma f16c avx2 bmi2 sha_ni clzero

processor	: 1
model name	: AMD EPYC 7B13
flags		: fpu avx512f avx512_bf16
)";
constexpr char kZen5[] = R"(processor	: 0
cpu family	: 26
model		: 2
model name	: AMD EPYC
flags		: fpu avx fma avx2 avx512f avx512dq avx_vnni avx512_bf16 avx512_vnni
)";
constexpr char kSapphireRapids[] = R"(processor	: 0
cpu family	: 6
model		: 143
model name	: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz
flags		: fpu avx fma avx2 avx512f avx512_fp16 amx_bf16 amx_tile amx_int8
)";

TEST(CpuFeaturesTest, Zen3HasNoNativeBf16) {
  const CpuFeatures cpu = ParseCpuInfo(kZen3, "");
  EXPECT_EQ(cpu.model_name, "AMD EPYC 7B13");
  EXPECT_EQ(cpu.family, 25);
  EXPECT_EQ(cpu.model, 1);
  // Only the first processor's entry counts.
  EXPECT_FALSE(cpu.avx512f);
  const Bf16Support bf16 = CpuBf16Support(cpu);
  EXPECT_FALSE(bf16.native);
  EXPECT_EQ(bf16.detail, "no AVX-512 BF16 and no AMX-BF16");
  EXPECT_EQ(CpuDescription(cpu), "AMD EPYC 7B13 (family 25, model 1)");
  EXPECT_EQ(CpuIsaSummary(cpu), "AVX2, FMA");
}

TEST(CpuFeaturesTest, Zen5AndSapphireRapidsComputeBf16Natively) {
  const Bf16Support zen5 = CpuBf16Support(ParseCpuInfo(kZen5, ""));
  EXPECT_TRUE(zen5.native);
  EXPECT_EQ(zen5.detail, "AVX-512 BF16");
  const CpuFeatures intel = ParseCpuInfo(kSapphireRapids, "");
  EXPECT_TRUE(CpuBf16Support(intel).native);
  EXPECT_EQ(CpuBf16Support(intel).detail, "AMX-BF16");
  EXPECT_EQ(CpuIsaSummary(intel), "AVX2, FMA, AVX-512, AMX-BF16");
}

TEST(CpuFeaturesTest, AOnednnIsaCapBelowBf16HidesIt) {
  for (const char* cap : {"AVX2", "avx512_core", "AVX512_CORE_VNNI"}) {
    const Bf16Support bf16 = CpuBf16Support(ParseCpuInfo(kZen5, cap));
    EXPECT_FALSE(bf16.native) << cap;
    EXPECT_EQ(bf16.detail,
              std::string("its AVX-512 BF16 capped off by ONEDNN_MAX_CPU_ISA=") + cap);
  }
  for (const char* cap : {"ALL", "AVX512_CORE_BF16", "avx512_core_amx"}) {
    EXPECT_TRUE(CpuBf16Support(ParseCpuInfo(kSapphireRapids, cap)).native) << cap;
  }
}

TEST(CpuFeaturesTest, AnUnreadableCpuInfoIsAnUnknownCpuWithoutBf16) {
  const CpuFeatures cpu = ParseCpuInfo("", "");
  EXPECT_EQ(CpuDescription(cpu), "an unknown CPU");
  EXPECT_FALSE(CpuBf16Support(cpu).native);
  EXPECT_EQ(CpuBf16Support(cpu).detail, "an unknown CPU (/proc/cpuinfo names none), so float32");
}

}  // namespace
}  // namespace pipeline
