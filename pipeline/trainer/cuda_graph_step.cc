#include "pipeline/trainer/cuda_graph_step.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/util/torch_status.h"
#include "pipeline/util/torch_version.h"
#ifdef PIPELINE_CUDA
// The device-generic c10::Event and c10::StreamGuard, not c10/cuda's own:
// those call the CUDA runtime from inline code, which would need libcudart
// at link time (a pip wheel's LibTorch keeps it in another folder).
#include "ATen/autocast_mode.h"
#include "ATen/cuda/CUDAGraph.h"
#include "c10/core/Event.h"
#include "c10/core/StreamGuard.h"
#include "c10/cuda/CUDAStream.h"
#endif

namespace pipeline {

absl::Status CheckCudaGraphs(const TrainerConfig& trainer, const Strategy& strategy,
                             const std::string& strategy_name, bool cuda_build) {
  if (!trainer.cuda_graphs()) return absl::OkStatus();
  const std::string field = "trainer.cuda_graphs: true";
  if (!cuda_build) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " needs a CUDA build of the runner, and this one is CPU-only (LibTorch ",
        kLibTorchVersion, " without CUDA); leave cuda_graphs out, or build with --config=cuda "
        "(docs/cuda.md)"));
  }
  if (!strategy.device().is_cuda()) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " needs the model on a CUDA device, and strategy ", strategy_name, " runs on ",
        strategy.device().str(), "; set the strategy's device to \"cuda:0\" or leave "
        "cuda_graphs out"));
  }
  if (const absl::Status capturable = strategy.CanCaptureCudaGraphs(); !capturable.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": strategy ", strategy_name, " ",
                                                   capturable.message(),
                                                   "; use strategy single, or leave "
                                                   "cuda_graphs out"));
  }
  if (trainer.accumulate_steps() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " with accumulate_steps: ", trainer.accumulate_steps(),
        ": a captured backward writes the gradients, it cannot add to them; use "
        "accumulate_steps: 1 (with a larger batch) or leave cuda_graphs out"));
  }
  if (trainer.precision() == TrainerConfig::FP16_AUTOCAST) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " with precision: FP16_AUTOCAST: its loss scaler decides on the host after "
               "every backward; use BF16_AUTOCAST or FP32, or leave cuda_graphs out"));
  }
  return absl::OkStatus();
}

#ifdef PIPELINE_CUDA
struct CudaGraphStep::Captured {
  at::cuda::CUDAGraph graph;
  // Static inputs the graph reads and outputs it writes, on the device.
  torch::Tensor images, targets;
  StepOutput output;
  // Each trainable parameter and the gradient tensor the graph writes.
  std::vector<torch::Tensor> parameters, gradients;
};
#else
struct CudaGraphStep::Captured {};
#endif

CudaGraphStep::CudaGraphStep(std::function<void(const std::string&)> say)
    : say_(std::move(say)) {}

CudaGraphStep::~CudaGraphStep() = default;

absl::StatusOr<StepOutput> CudaGraphStep::ForwardBackward(Strategy& strategy, Model& model,
                                                          const torch::Tensor& images,
                                                          const torch::Tensor& targets,
                                                          const LossFunction& loss) {
#ifdef PIPELINE_CUDA
  if (captured_ != nullptr) {
    if (images.sizes() != captured_->images.sizes() ||
        targets.sizes() != captured_->targets.sizes() ||
        targets.scalar_type() != captured_->targets.scalar_type()) {
      return strategy.ForwardBackward(model, images, targets, loss);
    }
    return CallTorch("replaying the captured step", [&] { return Replay(images, targets); });
  }
  if (!given_up_ && eager_steps_ >= kWarmupSteps) {
    absl::StatusOr<std::unique_ptr<Captured>> captured =
        Capture(strategy, model, images, targets, loss);
    if (captured.ok()) {
      captured_ = std::move(*captured);
      return CallTorch("replaying the captured step", [&] { return Replay(images, targets); });
    }
    given_up_ = true;
    say_(absl::StrCat("trainer.cuda_graphs: the training step could not be captured (",
                      captured.status().message(), "); training goes on without CUDA graphs"));
    // The failed capture left the gradients unset or in the graph's memory.
    for (torch::Tensor& p : model.parameters()) p.mutable_grad() = torch::Tensor();
  }
  ++eager_steps_;
#endif
  return strategy.ForwardBackward(model, images, targets, loss);
}

#ifdef PIPELINE_CUDA
absl::StatusOr<std::unique_ptr<CudaGraphStep::Captured>> CudaGraphStep::Capture(
    Strategy& strategy, Model& model, const torch::Tensor& images, const torch::Tensor& targets,
    const LossFunction& loss) {
  auto captured = std::make_unique<Captured>();
  const torch::Device device = strategy.device();
  RETURN_IF_ERROR(CallTorch("preparing the capture", [&] {
    captured->images = torch::empty_like(images, images.options().device(device));
    captured->targets = torch::empty_like(targets, targets.options().device(device));
    captured->images.copy_(images);
    captured->targets.copy_(targets);
    // Gradients the captured backward creates live in the graph's memory
    // and are written, not added to, on each replay.
    for (torch::Tensor& p : model.parameters()) {
      if (!p.requires_grad()) continue;
      p.mutable_grad() = torch::Tensor();
      captured->parameters.push_back(p);
    }
  }));
  // Capture on a side stream that first waits for the work queued so far.
  c10::cuda::CUDAStream outer = c10::cuda::getCurrentCUDAStream(device.index());
  c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, device.index());
  absl::StatusOr<StepOutput> output;
  // Autocast's cache of cast weights would hold tensors of the capture.
  const bool cache = at::autocast::is_autocast_cache_enabled();
  at::autocast::set_autocast_cache_enabled(false);
  absl::Status ended = CallTorch("capturing the step", [&] {
    c10::Event queued(c10::DeviceType::CUDA);
    queued.record(outer);
    queued.block(side);
    c10::StreamGuard on_side(side);
    captured->graph.capture_begin();
    output = strategy.ForwardBackwardOnDevice(model, captured->images, captured->targets, loss);
    captured->graph.capture_end();  // throws when the pass could not be captured
    c10::Event done(c10::DeviceType::CUDA);
    done.record(side);
    done.block(outer);
  });
  at::autocast::set_autocast_cache_enabled(cache);
  if (!output.ok()) return output.status();
  RETURN_IF_ERROR(ended);
  captured->output = std::move(*output);
  for (const torch::Tensor& p : captured->parameters) captured->gradients.push_back(p.grad());
  return captured;
}

StepOutput CudaGraphStep::Replay(const torch::Tensor& images, const torch::Tensor& targets) {
  captured_->images.copy_(images, /*non_blocking=*/true);
  captured_->targets.copy_(targets, /*non_blocking=*/true);
  captured_->graph.replay();
  // zero_grad may have let go of them (LibTorch 2.x sets them to none).
  for (size_t i = 0; i < captured_->parameters.size(); ++i) {
    captured_->parameters[i].mutable_grad() = captured_->gradients[i];
  }
  return StepOutput{captured_->output.loss.cpu(), captured_->output.logits.cpu()};
}
#else
absl::StatusOr<std::unique_ptr<CudaGraphStep::Captured>> CudaGraphStep::Capture(
    Strategy&, Model&, const torch::Tensor&, const torch::Tensor&, const LossFunction&) {
  return absl::FailedPreconditionError("CUDA graphs need a CUDA build");
}

StepOutput CudaGraphStep::Replay(const torch::Tensor&, const torch::Tensor&) { return {}; }
#endif

}  // namespace pipeline
