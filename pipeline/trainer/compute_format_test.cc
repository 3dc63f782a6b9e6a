#include "pipeline/trainer/compute_format.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

DeviceNumerics Cpu(bool native_bf16) {
  DeviceNumerics cpu;
  cpu.description = native_bf16 ? "CPU AMD EPYC (family 26, model 2) with AVX2, FMA, AVX-512, "
                                  "AVX-512 BF16"
                                : "CPU AMD EPYC 7B13 (family 25, model 1) with AVX2, FMA";
  cpu.bf16 = native_bf16 ? Bf16Support{true, "AVX-512 BF16"}
                         : Bf16Support{false, "no AVX-512 BF16 and no AMX-BF16"};
  return cpu;
}

DeviceNumerics Gpu(int major) {
  DeviceNumerics gpu;
  gpu.is_cuda = true;
  gpu.description = "GPU test";
  gpu.bf16.native = major >= 8;
  gpu.bf16.detail = "compute capability";
  gpu.fast_fp16 = major >= 7;
  return gpu;
}

TrainerConfig Trainer(TrainerConfig::Precision precision,
                      MemoryFormat::Value memory_format = MemoryFormat::AUTO) {
  TrainerConfig trainer;
  trainer.set_precision(precision);
  trainer.set_memory_format(memory_format);
  return trainer;
}

// A probe that must not run.
absl::StatusOr<double> NoProbe(bool) {
  ADD_FAILURE() << "the bf16 probe ran";
  return 0;
}

TEST(ComputeFormatTest, AutoTakesBf16AndChannelsLastWhereBf16IsNative) {
  for (const DeviceNumerics& device : {Cpu(true), Gpu(8), Gpu(9)}) {
    auto format = ChooseComputeFormat(Trainer(TrainerConfig::AUTO), device, NoProbe);
    ASSERT_TRUE(format.ok()) << format.status();
    EXPECT_EQ(format->precision, TrainerConfig::BF16_AUTOCAST);
    EXPECT_TRUE(format->channels_last);
    EXPECT_THAT(format->reason, HasSubstr("precision: AUTO chose BF16_AUTOCAST"));
    EXPECT_THAT(format->reason, HasSubstr("computes bf16 natively"));
    EXPECT_THAT(format->reason, HasSubstr("memory_format: AUTO chose CHANNELS_LAST"));
  }
}

TEST(ComputeFormatTest, AutoTakesFloat32AndContiguousElsewhere) {
  for (const DeviceNumerics& device : {Cpu(false), Gpu(7)}) {
    auto format = ChooseComputeFormat(Trainer(TrainerConfig::AUTO), device, NoProbe);
    ASSERT_TRUE(format.ok()) << format.status();
    EXPECT_EQ(format->precision, TrainerConfig::FP32);
    EXPECT_FALSE(format->channels_last);
    EXPECT_THAT(format->reason, HasSubstr("precision: AUTO chose FP32"));
    EXPECT_THAT(format->reason, HasSubstr("does not compute bf16 natively"));
    EXPECT_THAT(format->reason, HasSubstr("memory_format: AUTO chose CONTIGUOUS"));
  }
}

TEST(ComputeFormatTest, AnExplicitMemoryFormatIsKept) {
  auto format = ChooseComputeFormat(Trainer(TrainerConfig::FP32, MemoryFormat::CHANNELS_LAST),
                                    Cpu(true), NoProbe);
  ASSERT_TRUE(format.ok());
  EXPECT_TRUE(format->channels_last);
  format = ChooseComputeFormat(Trainer(TrainerConfig::AUTO, MemoryFormat::CONTIGUOUS), Cpu(true),
                               NoProbe);
  ASSERT_TRUE(format.ok());
  EXPECT_EQ(format->precision, TrainerConfig::BF16_AUTOCAST);
  EXPECT_FALSE(format->channels_last);
  EXPECT_THAT(format->reason, Not(HasSubstr("memory_format")));
}

TEST(ComputeFormatTest, Bf16WhereItIsEmulatedIsRefusedWithTheMeasuredSlowdown) {
  bool probed_channels_last = false;
  auto format = ChooseComputeFormat(Trainer(TrainerConfig::BF16_AUTOCAST), Cpu(false),
                                    [&](bool channels_last) -> absl::StatusOr<double> {
                                      probed_channels_last = channels_last;
                                      return 137.4;
                                    });
  ASSERT_FALSE(format.ok());
  EXPECT_EQ(format.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(probed_channels_last);  // the format the run would have used
  EXPECT_EQ(format.status().message(),
            "trainer.precision: BF16_AUTOCAST, but this CPU AMD EPYC 7B13 (family 25, model 1) "
            "with AVX2, FMA, has no AVX-512 BF16 and no AMX-BF16: bf16 would run emulated, and a "
            "start-up probe (one small convolution step, forward and backward) ran 137x slower "
            "in bf16 than in float32. Use precision: AUTO (float32 here, bf16 where the CPU has "
            "it) or FP32, or set trainer.allow_emulated_bf16: true to run emulated bf16 anyway");
}

TEST(ComputeFormatTest, Bf16ThatDoesNotRunAtAllIsRefusedEvenWhenAllowed) {
  TrainerConfig trainer = Trainer(TrainerConfig::BF16_AUTOCAST);
  for (const bool allowed : {false, true}) {
    trainer.set_allow_emulated_bf16(allowed);
    auto format = ChooseComputeFormat(trainer, Cpu(false), [](bool) -> absl::StatusOr<double> {
      return absl::InternalError("bf16: could not create a primitive descriptor iterator");
    });
    ASSERT_FALSE(format.ok());
    EXPECT_EQ(format.status().message(),
              "trainer.precision: BF16_AUTOCAST, but this CPU AMD EPYC 7B13 (family 25, model 1) "
              "with AVX2, FMA, has no AVX-512 BF16 and no AMX-BF16, and a start-up probe (one "
              "small convolution step, forward and backward) could not run in bf16 at all (bf16: "
              "could not create a primitive descriptor iterator). Use precision: AUTO (float32 "
              "here, bf16 where the CPU has it) or FP32");
  }
}

TEST(ComputeFormatTest, AllowEmulatedBf16RunsItAndSaysSo) {
  TrainerConfig trainer = Trainer(TrainerConfig::BF16_AUTOCAST, MemoryFormat::CONTIGUOUS);
  trainer.set_allow_emulated_bf16(true);
  auto format = ChooseComputeFormat(trainer, Cpu(false), [](bool) -> absl::StatusOr<double> { return 80.0; });
  ASSERT_TRUE(format.ok()) << format.status();
  EXPECT_EQ(format->precision, TrainerConfig::BF16_AUTOCAST);
  EXPECT_FALSE(format->channels_last);
  EXPECT_THAT(format->reason, HasSubstr("bf16 is emulated on this CPU"));
  EXPECT_THAT(format->reason, HasSubstr("ran 80x slower"));
}

TEST(ComputeFormatTest, Bf16WhereItIsNativeNeedsNoProbe) {
  auto format = ChooseComputeFormat(Trainer(TrainerConfig::BF16_AUTOCAST), Cpu(true), NoProbe);
  ASSERT_TRUE(format.ok());
  EXPECT_EQ(format->reason,
            "precision: BF16_AUTOCAST as the config says; memory_format: AUTO chose "
            "CHANNELS_LAST (autocast kernels run in NHWC)");
}

TEST(ComputeFormatTest, Fp16OnAGpuWithoutTensorCoresSaysSo) {
  auto format = ChooseComputeFormat(Trainer(TrainerConfig::FP16_AUTOCAST), Gpu(6), NoProbe);
  ASSERT_TRUE(format.ok());
  EXPECT_THAT(format->reason, HasSubstr("this GPU has no fast fp16"));
  format = ChooseComputeFormat(Trainer(TrainerConfig::FP16_AUTOCAST), Gpu(8), NoProbe);
  EXPECT_THAT(format->reason, Not(HasSubstr("fast fp16")));
}

TEST(ComputeFormatTest, ApplyWritesTheChoiceIn) {
  TrainerConfig trainer = Trainer(TrainerConfig::AUTO);
  ApplyComputeFormat({TrainerConfig::BF16_AUTOCAST, true, "", ""}, trainer);
  EXPECT_EQ(trainer.precision(), TrainerConfig::BF16_AUTOCAST);
  EXPECT_EQ(trainer.memory_format(), MemoryFormat::CHANNELS_LAST);
}

// The real probe: emulated or not, it measures both steps and returns a
// finite positive ratio (train_cli_test runs it where bf16 is emulated).
TEST(ComputeFormatTest, TheProbeMeasuresARatio) {
  const absl::StatusOr<double> slowdown = MeasureCpuBf16Slowdown(true);
  ASSERT_TRUE(slowdown.ok()) << slowdown.status();
  EXPECT_GT(*slowdown, 0);
  EXPECT_LT(*slowdown, 1e6);
}

TEST(ComputeFormatTest, TheHostCpuIsDescribed) {
  const DeviceNumerics cpu = DescribeDevice(torch::Device(torch::kCPU));
  EXPECT_FALSE(cpu.is_cuda);
  EXPECT_THAT(cpu.description, HasSubstr("CPU "));
  EXPECT_FALSE(cpu.bf16.detail.empty());
}

TEST(ComputeFormatTest, CudnnAutotuningOnCudaUnlessDeterministicOrSwitchedOff) {
  auto on_gpu = ChooseComputeFormat(Trainer(TrainerConfig::FP32), Gpu(9), NoProbe);
  ASSERT_TRUE(on_gpu.ok()) << on_gpu.status();
  EXPECT_TRUE(on_gpu->cudnn_benchmark);
  EXPECT_THAT(on_gpu->reason, HasSubstr("cudnn_benchmark: on"));
  TrainerConfig deterministic = Trainer(TrainerConfig::FP32);
  deterministic.set_deterministic(true);
  auto exact = ChooseComputeFormat(deterministic, Gpu(9), NoProbe);
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_FALSE(exact->cudnn_benchmark);
  EXPECT_THAT(exact->reason, HasSubstr("cudnn_benchmark: off under deterministic"));
  TrainerConfig switched_off = Trainer(TrainerConfig::FP32);
  switched_off.set_cudnn_benchmark(false);
  auto off = ChooseComputeFormat(switched_off, Gpu(9), NoProbe);
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->cudnn_benchmark);
  auto on_cpu = ChooseComputeFormat(Trainer(TrainerConfig::FP32), Cpu(true), NoProbe);
  ASSERT_TRUE(on_cpu.ok()) << on_cpu.status();
  EXPECT_FALSE(on_cpu->cudnn_benchmark);
  EXPECT_THAT(on_cpu->reason, Not(HasSubstr("cudnn")));
}

}  // namespace
}  // namespace pipeline
