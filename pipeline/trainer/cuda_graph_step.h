#ifndef PIPELINE_TRAINER_CUDA_GRAPH_STEP_H_
#define PIPELINE_TRAINER_CUDA_GRAPH_STEP_H_

// trainer.cuda_graphs: the training step's forward and backward captured as
// one CUDA graph and replayed for each batch of the captured shape, so a
// step costs one launch instead of one per kernel (what limits small
// models on small images). The LibTorch C++ CUDA-graphs recipe: eager
// warm-up steps, capture on a side stream into static input and output
// tensors, replay after copying each batch into the inputs.

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pipeline/config/pipeline.pb.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/util/torch_version.h"

namespace pipeline {

// Whether `trainer` (precision decided) can capture its step under
// `strategy` (registered as `strategy_name`) in a build with or without
// CUDA; the error names the field, the reason and the way out. OK when
// cuda_graphs is off.
absl::Status CheckCudaGraphs(const TrainerConfig& trainer, const Strategy& strategy,
                             const std::string& strategy_name, bool cuda_build = kCudaBuild);

class CudaGraphStep {
 public:
  // Eager steps before the capture: cuDNN's autotuning, LibTorch's lazy
  // initialisation and the optimizer's state all happen outside the graph.
  static constexpr int kWarmupSteps = 3;

  // `say` prints one line (the reason the run goes on without graphs).
  explicit CudaGraphStep(std::function<void(const std::string&)> say);
  ~CudaGraphStep();
  CudaGraphStep(const CudaGraphStep&) = delete;
  CudaGraphStep& operator=(const CudaGraphStep&) = delete;

  // Strategy::ForwardBackward of one batch: eager during the warm-up, then
  // captured once, and replayed for every batch of the captured shapes; a
  // batch of another shape (a last partial one) runs eagerly. Afterwards
  // each parameter's grad holds the batch's gradient, as eagerly.
  absl::StatusOr<StepOutput> ForwardBackward(Strategy& strategy, Model& model,
                                             const torch::Tensor& images,
                                             const torch::Tensor& targets,
                                             const LossFunction& loss);

  bool captured() const { return captured_ != nullptr; }

 private:
  struct Captured;
  absl::StatusOr<std::unique_ptr<Captured>> Capture(Strategy& strategy, Model& model,
                                                    const torch::Tensor& images,
                                                    const torch::Tensor& targets,
                                                    const LossFunction& loss);
  StepOutput Replay(const torch::Tensor& images, const torch::Tensor& targets);

  std::function<void(const std::string&)> say_;
  std::unique_ptr<Captured> captured_;
  int eager_steps_ = 0;
  bool given_up_ = false;
};

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_CUDA_GRAPH_STEP_H_
