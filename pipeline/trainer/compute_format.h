#ifndef PIPELINE_TRAINER_COMPUTE_FORMAT_H_
#define PIPELINE_TRAINER_COMPUTE_FORMAT_H_

// The arithmetic and memory order a run computes in, chosen for the device
// its strategy runs on: trainer.precision and trainer.memory_format with
// AUTO decided, and an explicit bf16 request checked against the hardware.
// bf16 is a trap on a CPU without bf16 instructions (oneDNN's reference
// kernels, over 100x slower than float32), so that request is refused with
// the slowdown measured on the spot, unless the config allows it.

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "pipeline/config/pipeline.pb.h"
#include "pipeline/util/cpu_features.h"
#include "torch/types.h"

namespace pipeline {

// What a device offers for the choice.
struct DeviceNumerics {
  bool is_cuda = false;
  // "CPU AMD EPYC 7B13 (family 25, model 1) with AVX2, FMA", or
  // "GPU NVIDIA H100 80GB HBM3 (compute capability 9.0)".
  std::string description;
  Bf16Support bf16;
  // CUDA: compute capability 7.0 or later (tensor cores for fp16).
  bool fast_fp16 = false;
};

// The device a strategy runs on: the host CPU, or the CUDA device's
// properties (CUDA build).
DeviceNumerics DescribeDevice(const torch::Device& device);

// Time of one bf16-autocast training step of a small convolution over the
// same step in float32 (both after a warm-up), on the CPU with the current
// thread count: well under a second where bf16 is emulated. An error where
// bf16 does not run at all (oneDNN capped below its bf16 kernels on a CPU
// that ATen takes for bf16-capable has none to offer).
absl::StatusOr<double> MeasureCpuBf16Slowdown(bool channels_last);

struct ComputeFormat {
  TrainerConfig::Precision precision = TrainerConfig::FP32;  // never AUTO
  bool channels_last = false;
  // One line for the start header and run_info.jsonl: what was chosen and
  // why ("precision: AUTO chose BF16_AUTOCAST: the CPU computes bf16
  // natively (AVX-512 BF16); memory_format: AUTO chose CHANNELS_LAST ...").
  std::string reason;
  std::string device;  // DeviceNumerics::description
  // cuDNN's autotuner (torch.backends.cudnn.benchmark): CUDA only.
  bool cudnn_benchmark = false;
};

// Decides trainer.precision and trainer.memory_format for `device`.
// `measure_slowdown` runs only when bf16 is asked for where it is emulated.
absl::StatusOr<ComputeFormat> ChooseComputeFormat(
    const TrainerConfig& trainer, const DeviceNumerics& device,
    const std::function<absl::StatusOr<double>(bool channels_last)>& measure_slowdown);

// (name, value) pairs for run_info.jsonl's "compute" object: precision,
// memory_format, device, reason.
std::vector<std::pair<std::string, std::string>> ComputeFormatFields(const ComputeFormat& format);

// `trainer` with the choice written in (precision and memory_format never
// AUTO), for everything downstream that reads them; cuDNN's autotuner set
// as chosen.
void ApplyComputeFormat(const ComputeFormat& format, TrainerConfig& trainer);

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_COMPUTE_FORMAT_H_
