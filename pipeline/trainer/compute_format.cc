#include "pipeline/trainer/compute_format.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "ATen/Context.h"
#include "absl/strings/str_format.h"
#include "pipeline/trainer/autocast.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/util/torch_status.h"
#include "pipeline/util/torch_version.h"
#include "torch/nn/functional/conv.h"
#ifdef PIPELINE_CUDA
#include "ATen/cuda/CUDAContext.h"
#endif

namespace pipeline {
namespace {

std::string PrecisionName(TrainerConfig::Precision precision) {
  return TrainerConfig::Precision_Name(precision);
}

DeviceNumerics DescribeCpu() {
  const CpuFeatures& cpu = HostCpuFeatures();
  DeviceNumerics numerics;
  numerics.description =
      absl::StrCat("CPU ", CpuDescription(cpu), " with ", CpuIsaSummary(cpu));
  numerics.bf16 = CpuBf16Support(cpu);
  return numerics;
}

DeviceNumerics DescribeCuda([[maybe_unused]] const torch::Device& device) {
  DeviceNumerics numerics;
  numerics.is_cuda = true;
#ifdef PIPELINE_CUDA
  const cudaDeviceProp* properties =
      at::cuda::getDeviceProperties(device.has_index() ? device.index() : 0);
  const std::string capability = absl::StrCat(properties->major, ".", properties->minor);
  numerics.description =
      absl::StrCat("GPU ", properties->name, " (compute capability ", capability, ")");
  numerics.bf16 = properties->major >= 8
                      ? Bf16Support{true, absl::StrCat("compute capability ", capability)}
                      : Bf16Support{false, absl::StrCat("compute capability ", capability,
                                                        ", below 8.0 (Ampere)")};
  numerics.fast_fp16 = properties->major >= 7;
#else
  numerics.description = "a CUDA device (this build is CPU-only)";
#endif
  return numerics;
}

// Seconds of the fastest of `repeats` runs of `step`, after one warm-up
// run; stops early once the runs have taken a second.
double FastestSeconds(const std::function<void()>& step, int repeats) {
  step();
  double best = 1e30, spent = 0;
  for (int i = 0; i < repeats && spent < 1.0; ++i) {
    const auto start = std::chrono::steady_clock::now();
    step();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, seconds);
    spent += seconds;
  }
  return best;
}

constexpr char kProbe[] =
    "a start-up probe (one small convolution step, forward and backward)";
constexpr char kUseInstead[] =
    "Use precision: AUTO (float32 here, bf16 where the CPU has it) or FP32";

std::string ChannelsLastReason(const TrainerConfig& trainer, bool autocast) {
  if (trainer.memory_format() != MemoryFormat::AUTO) return "";
  return autocast ? "; memory_format: AUTO chose CHANNELS_LAST (autocast kernels run in NHWC)"
                  : "; memory_format: AUTO chose CONTIGUOUS (channels-last gains nothing "
                    "measurable in float32)";
}

}  // namespace

DeviceNumerics DescribeDevice(const torch::Device& device) {
  return device.is_cuda() ? DescribeCuda(device) : DescribeCpu();
}

absl::StatusOr<double> MeasureCpuBf16Slowdown(bool channels_last) {
  torch::manual_seed(0);
  const auto format = channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  const torch::Tensor input = torch::randn({8, 16, 28, 28}).contiguous(format);
  const torch::Tensor weight = torch::randn({16, 16, 3, 3}).contiguous(format);
  auto step = [&](bool bf16, const torch::Tensor& x) {
    torch::AutoGradMode grad(true);
    const torch::Tensor w = weight.detach().requires_grad_(true);
    torch::Tensor loss;
    {
      AutocastScope autocast(bf16 ? TrainerConfig::BF16_AUTOCAST : TrainerConfig::FP32);
      loss = torch::nn::functional::conv2d(x, w,
                                           torch::nn::functional::Conv2dFuncOptions().padding(1))
                 .to(at::kFloat)
                 .square()
                 .mean();
    }
    loss.backward();
  };
  const torch::Tensor contiguous_input = input.contiguous();
  ASSIGN_OR_RETURN(const double fp32,
                   CallTorch("float32", [&] {
                     return FastestSeconds([&] { step(false, contiguous_input); }, 5);
                   }));
  ASSIGN_OR_RETURN(const double bf16, CallTorch("bf16", [&] {
                     return FastestSeconds([&] { step(true, input); }, 2);
                   }));
  return bf16 / std::max(fp32, 1e-9);
}

absl::StatusOr<ComputeFormat> ChooseComputeFormat(
    const TrainerConfig& trainer, const DeviceNumerics& device,
    const std::function<absl::StatusOr<double>(bool channels_last)>& measure_slowdown) {
  ComputeFormat format;
  format.device = device.description;
  const TrainerConfig::Precision asked = trainer.precision();
  if (asked == TrainerConfig::AUTO) {
    format.precision = device.bf16.native ? TrainerConfig::BF16_AUTOCAST : TrainerConfig::FP32;
    format.reason = absl::StrCat(
        "precision: AUTO chose ", PrecisionName(format.precision), ": the ",
        device.is_cuda ? "GPU" : "CPU",
        device.bf16.native ? " computes bf16 natively (" : " does not compute bf16 natively (",
        device.bf16.detail, ")");
  } else {
    format.precision = asked;
    format.reason = absl::StrCat("precision: ", PrecisionName(asked), " as the config says");
  }
  const bool autocast = format.precision != TrainerConfig::FP32;
  format.channels_last = trainer.memory_format() == MemoryFormat::AUTO
                             ? autocast
                             : trainer.memory_format() == MemoryFormat::CHANNELS_LAST;
  absl::StrAppend(&format.reason, ChannelsLastReason(trainer, autocast));

  if (asked == TrainerConfig::BF16_AUTOCAST && !device.is_cuda && !device.bf16.native) {
    const std::string lacks = absl::StrCat("trainer.precision: BF16_AUTOCAST, but this ",
                                           device.description, ", has ", device.bf16.detail);
    const absl::StatusOr<double> slowdown = measure_slowdown(format.channels_last);
    if (!slowdown.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(lacks, ", and ", kProbe,
                                                     " could not run in bf16 at all (",
                                                     slowdown.status().message(), "). ",
                                                     kUseInstead));
    }
    const std::string measured =
        absl::StrFormat("%s ran %.0fx slower in bf16 than in float32", kProbe, *slowdown);
    if (!trainer.allow_emulated_bf16()) {
      return absl::InvalidArgumentError(absl::StrCat(
          lacks, ": bf16 would run emulated, and ", measured, ". ", kUseInstead,
          ", or set trainer.allow_emulated_bf16: true to run emulated bf16 anyway"));
    }
    absl::StrAppend(&format.reason, "; bf16 is emulated on this CPU (", device.bf16.detail,
                    ") and allow_emulated_bf16 is set: ", measured);
  }
  // Shapes are fixed (the loader makes every batch one size), so timing
  // cuDNN's algorithms once per shape pays for itself within a few steps.
  format.cudnn_benchmark = device.is_cuda && trainer.cudnn_benchmark() && !trainer.deterministic();
  if (device.is_cuda) {
    absl::StrAppend(&format.reason, "; cudnn_benchmark: ",
                    format.cudnn_benchmark ? "on (cuDNN picks each convolution's fastest "
                                             "algorithm for its shape)"
                    : trainer.deterministic() ? "off under deterministic"
                                              : "off as the config says");
  }
  if (asked == TrainerConfig::FP16_AUTOCAST && device.is_cuda && !device.fast_fp16) {
    absl::StrAppend(&format.reason, "; this GPU has no fast fp16 (tensor cores arrive with "
                                    "compute capability 7.0): FP16_AUTOCAST will not be faster "
                                    "than FP32 here");
  }
  return format;
}

void ApplyComputeFormat(const ComputeFormat& format, TrainerConfig& trainer) {
  trainer.set_precision(format.precision);
  trainer.set_memory_format(format.channels_last ? MemoryFormat::CHANNELS_LAST
                                                 : MemoryFormat::CONTIGUOUS);
  at::globalContext().setBenchmarkCuDNN(format.cudnn_benchmark);
}

std::vector<std::pair<std::string, std::string>> ComputeFormatFields(const ComputeFormat& format) {
  return {{"precision", PrecisionName(format.precision)},
          {"memory_format", format.channels_last ? "CHANNELS_LAST" : "CONTIGUOUS"},
          {"cudnn_benchmark", format.cudnn_benchmark ? "true" : "false"},
          {"device", format.device},
          {"reason", format.reason}};
}

}  // namespace pipeline
