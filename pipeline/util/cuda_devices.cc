#include "pipeline/util/cuda_devices.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "pipeline/util/torch_version.h"
#include "torch/cuda.h"

namespace pipeline {

int VisibleCudaDevices() {
  return kCudaBuild ? static_cast<int>(torch::cuda::device_count()) : 0;
}

absl::Status CheckCudaDevice(const std::string& field, int index) {
  if (!kCudaBuild) {
    return absl::FailedPreconditionError(absl::StrCat(
        field, " needs a CUDA build of the runner, and this one is CPU-only (LibTorch ",
        kLibTorchVersion, " without CUDA); use device \"cpu\", or build with --config=cuda "
        "(docs/cuda.md)"));
  }
  const int visible = VisibleCudaDevices();
  if (visible == 0) {
    const char* visible_devices = std::getenv("CUDA_VISIBLE_DEVICES");
    return absl::FailedPreconditionError(absl::StrCat(
        field, ": no CUDA device is visible on this machine (CUDA_VISIBLE_DEVICES=\"",
        visible_devices != nullptr ? visible_devices : "<unset>",
        "\"; nvidia-smi lists what the driver sees); use device \"cpu\" here"));
  }
  if (index >= visible) {
    return absl::FailedPreconditionError(absl::StrCat(
        field, " but only ", visible, " CUDA device", visible == 1 ? " is" : "s are",
        " visible (cuda:0", visible > 1 ? absl::StrCat(" .. cuda:", visible - 1) : "",
        "); choose one of those"));
  }
  return absl::OkStatus();
}

}  // namespace pipeline
