#include "tools/bench/compute_ceiling.h"

#include <cstdint>

#include "ATen/Parallel.h"
#include "ATen/ops/cross_entropy_loss.h"
#include "ATen/ops/randint.h"
#include "ATen/ops/randn.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/registry/registry.h"
#include "pipeline/trainer/autocast.h"
#include "pipeline/weights/build_model.h"
#include "tools/bench/or_die.h"
#include "tools/bench/timing.h"
#include "torch/csrc/autograd/grad_mode.h"

namespace pipeline {
namespace bench {
namespace {

constexpr int64_t kSize = 224;
constexpr int64_t kChannels = 3;
constexpr int64_t kClasses = 2;

}  // namespace

ComputeResult ComputeCeiling(const PipelineConfig& config, int batch_size, double min_seconds,
                             bool channels_last, bool bf16) {
  at::set_num_threads(config.trainer().threads());
  auto model = OrDie(BuildModel(config.model(), {kClasses, kChannels}));
  model->train();
  const auto format = channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  if (channels_last) {
    torch::NoGradGuard no_grad;
    for (at::Tensor& p : model->parameters()) {
      if (p.dim() == 4) p.set_data(p.contiguous(format));
    }
  }
  auto optimizer =
      OrDie(Registry<torch::optim::Optimizer>::Global().Create(
          config.optimizer(), OptimizerContext::OneGroup(model->parameters())));
  const at::Tensor images = at::randn({batch_size, kChannels, kSize, kSize}).contiguous(format);
  const at::Tensor labels = at::randint(kClasses, {batch_size}, at::kLong);
  const double steps = StepsPerSecond(min_seconds, [&] {
    ReleaseGradients(*optimizer);  // as the trainer does
    at::Tensor loss;
    {
      // As the trainer and the strategies run a step: forward and loss
      // under autocast, backward outside it.
      AutocastScope autocast(bf16 ? TrainerConfig::BF16_AUTOCAST : TrainerConfig::FP32);
      loss = at::cross_entropy_loss(model->forward(images), labels);
    }
    Backward(loss);
    optimizer->step();
  });
  return {steps * batch_size, config.trainer().threads()};
}

}  // namespace bench
}  // namespace pipeline
