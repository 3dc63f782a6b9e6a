// strategy `single`: one model on one device; the reference every parallel
// strategy is checked against.
//
//   strategy {
//     name: "single"
//     options { [type.googleapis.com/pipeline.SingleDeviceOptions] { device: "cpu" } }
//   }

#include <memory>

#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/util/cuda_devices.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/util/torch_status.h"
#include "plugins/strategies/single/single.pb.h"
#include "torch/cuda.h"

namespace pipeline {
namespace {

class SingleDeviceStrategy : public Strategy {
 public:
  explicit SingleDeviceStrategy(torch::Device device) : device_(device) {}

  absl::Status Prepare(Model& model, const ModelFactory&) override {
    return CallTorch("moving the model to " + device_.str(), [&] { model.to(device_); });
  }

  absl::StatusOr<StepOutput> ForwardBackward(Model& model, const torch::Tensor& images,
                                             const torch::Tensor& labels,
                                             const LossFunction& loss_function) override {
    ASSIGN_OR_RETURN(StepOutput output,
                     ForwardBackwardOnDevice(model, images, labels, loss_function));
    return CallTorch("training step", [&] {
      return StepOutput{output.loss.cpu(), output.logits.cpu()};
    });
  }

  absl::StatusOr<StepOutput> ForwardBackwardOnDevice(Model& model, const torch::Tensor& images,
                                                     const torch::Tensor& labels,
                                                     const LossFunction& loss_function) override {
    return CallTorch("training step", [&] {
      torch::Tensor logits = model.forward(images.to(device_, /*non_blocking=*/true));
      torch::Tensor loss =
          TrainingLoss(model, logits, labels.to(device_, /*non_blocking=*/true), loss_function);
      Backward(loss);
      return StepOutput{loss.detach(), logits.detach()};
    });
  }

  absl::Status CanCaptureCudaGraphs() const override { return absl::OkStatus(); }

  absl::StatusOr<torch::Tensor> Forward(Model& model, const torch::Tensor& images) override {
    return CallTorch("inference", [&] {
      return model.forward(images.to(device_, /*non_blocking=*/true)).cpu();
    });
  }

  torch::Device device() const override { return device_; }

 private:
  torch::Device device_;
};

absl::StatusOr<torch::Device> ParseDevice(const std::string& name) {
  try {
    torch::Device device(name);
    if (device.is_cuda()) {
      const absl::Status usable = CheckCudaDevice(absl::StrCat("device: \"", name, "\""),
                                                  device.has_index() ? device.index() : 0);
      if (!usable.ok()) return usable;
    }
    return device;
  } catch (const std::exception&) {
    return absl::InvalidArgumentError(
        absl::StrCat("device: \"", name, "\" is not a device; use \"cpu\" or \"cuda:0\""));
  }
}

PIPELINE_DEFAULT_PLUGIN(Strategy, "strategy", "single");
PIPELINE_REGISTER_PLUGIN(Strategy, "single", SingleDeviceOptions,
                         "The model on one device (cpu, or cuda:N in a CUDA build)",
                         [](const SingleDeviceOptions& options, const StrategyContext&)
                             -> absl::StatusOr<std::unique_ptr<Strategy>> {
                           auto device = ParseDevice(options.device());
                           if (!device.ok()) return device.status();
                           return std::make_unique<SingleDeviceStrategy>(*device);
                         },
                         [](const SingleDeviceOptions& options) {
                           return ParseDevice(options.device()).status();
                         });

}  // namespace
}  // namespace pipeline
