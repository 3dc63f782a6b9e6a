#include "pipeline/layers/batch_norm.h"

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "torch/csrc/autograd/custom_function.h"
#include "torch/nn/modules/batchnorm.h"
#include "torch/torch.h"

namespace pipeline {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Every dimension but the channels (1): N, H, W.
std::vector<int64_t> ReducedDimensions(const torch::Tensor& input) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (d != 1) dims.push_back(d);
  }
  return dims;
}

// A per-channel vector shaped to broadcast against `input` (1 x C x 1 x 1).
torch::Tensor PerChannel(const torch::Tensor& values, const torch::Tensor& input) {
  std::vector<int64_t> shape(input.dim(), 1);
  shape[1] = values.numel();
  return values.view(shape);
}

struct GlobalStatistics {
  torch::Tensor mean;      // per channel, float32
  torch::Tensor variance;  // per channel, biased, float32
  double count = 0;        // values per channel in the global batch
};

// Each replica's count, mean and variance are gathered and combined with
// Chan et al.'s parallel formula (what torch.batch_norm_gather_stats_with_
// counts does), in double: summing x and x^2 instead would lose the digits
// the variance needs.
GlobalStatistics GatherStatistics(const torch::Tensor& input, BatchNormReplicas& replicas) {
  torch::NoGradGuard no_grad;
  const torch::Tensor x = input.to(torch::kFloat);
  const int64_t channels = x.size(1);
  const auto [variance, mean] = torch::var_mean(x, ReducedDimensions(x), /*unbiased=*/false);
  const torch::Tensor local = torch::cat(
      {torch::full({1}, static_cast<double>(x.numel() / channels), x.options().dtype(torch::kDouble)),
       mean.to(torch::kDouble), variance.to(torch::kDouble)});
  const torch::Tensor all = replicas.AllGather(local, "the sync BatchNorm statistics all-gather");
  const torch::Tensor counts = all.narrow(1, 0, 1);
  const torch::Tensor means = all.narrow(1, 1, channels);
  const torch::Tensor variances = all.narrow(1, 1 + channels, channels);
  GlobalStatistics global;
  global.count = counts.sum().item<double>();
  if (global.count <= 1) {
    throw std::runtime_error(absl::StrCat(
        "sync BatchNorm: expected more than 1 value per channel in the global batch, got ",
        global.count, " (input of shape [", absl::StrJoin(x.sizes(), ", "), "] on this rank)"));
  }
  const torch::Tensor combined_mean = (counts * means).sum(0) / global.count;
  global.variance =
      ((counts * (variances + (means - combined_mean).square())).sum(0) / global.count)
          .to(torch::kFloat);
  global.mean = combined_mean.to(torch::kFloat);
  return global;
}

// y = (x - mean) * invstd * weight + bias with the global mean and invstd;
// the backward pass all-reduces sum(dy) and sum(dy * (x - mean)) over the
// replicas, as torch.nn.modules._functions.SyncBatchNorm. The weight and
// bias gradients stay local: the strategy averages them like any other.
class SyncBatchNormFunction : public torch::autograd::Function<SyncBatchNormFunction> {
 public:
  static torch::Tensor forward(AutogradContext* context, const torch::Tensor& input,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               const torch::Tensor& mean, const torch::Tensor& invstd,
                               double count, BatchNormReplicas* replicas) {
    // The layer that owns `replicas` outlives every graph it builds.
    context->saved_data["replicas"] = reinterpret_cast<int64_t>(replicas);
    context->saved_data["count"] = count;
    context->save_for_backward({input, weight, mean, invstd});
    const torch::Tensor x = input.to(torch::kFloat);
    torch::Tensor y = (x - PerChannel(mean, x)) * PerChannel(invstd, x);
    if (weight.defined()) y = y * PerChannel(weight, x) + PerChannel(bias, x);
    return y.to(input.scalar_type());
  }

  static variable_list backward(AutogradContext* context, variable_list output_gradients) {
    const variable_list saved = context->get_saved_variables();
    const torch::Tensor& input = saved[0];
    const torch::Tensor& weight = saved[1];
    const torch::Tensor& mean = saved[2];
    const torch::Tensor& invstd = saved[3];
    auto* replicas =
        reinterpret_cast<BatchNormReplicas*>(context->saved_data["replicas"].toInt());
    const double count = context->saved_data["count"].toDouble();

    const torch::Tensor dy = output_gradients[0].to(torch::kFloat);
    const torch::Tensor centered = input.to(torch::kFloat) - PerChannel(mean, dy);
    const std::vector<int64_t> dims = ReducedDimensions(dy);
    const torch::Tensor sum_dy = dy.sum(dims);
    const torch::Tensor sum_dy_centered = (dy * centered).sum(dims);
    torch::Tensor grad_weight, grad_bias;
    if (weight.defined()) {
      grad_weight = sum_dy_centered * invstd;
      grad_bias = sum_dy;
    }
    torch::Tensor grad_input;
    if (context->needs_input_grad(0)) {
      torch::Tensor sums = torch::cat({sum_dy, sum_dy_centered});
      replicas->AllReduceSum(sums, "the sync BatchNorm gradient all-reduce");
      const int64_t channels = sum_dy.numel();
      const torch::Tensor mean_dy = sums.narrow(0, 0, channels) / count;
      const torch::Tensor mean_dy_centered = sums.narrow(0, channels, channels) / count;
      const torch::Tensor scale = weight.defined() ? invstd * weight : invstd;
      grad_input = (dy - PerChannel(mean_dy, dy) -
                    centered * PerChannel(invstd * invstd * mean_dy_centered, dy)) *
                   PerChannel(scale, dy);
      grad_input = grad_input.to(input.scalar_type());
    }
    return {grad_input, grad_weight, grad_bias, torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

BatchNorm2dImpl::BatchNorm2dImpl(const torch::nn::BatchNormOptions& options)
    : options(options) {
  reset();
}

// As torch::nn::NormImplBase::reset: the same names, order and initial
// values.
void BatchNorm2dImpl::reset() {
  const int64_t channels = options.num_features();
  if (options.affine()) {
    weight = register_parameter("weight", torch::ones({channels}));
    bias = register_parameter("bias", torch::zeros({channels}));
  } else {
    weight = register_parameter("weight", torch::Tensor(), /*requires_grad=*/false);
    bias = register_parameter("bias", torch::Tensor(), /*requires_grad=*/false);
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", torch::zeros({channels}));
    running_var = register_buffer("running_var", torch::ones({channels}));
    num_batches_tracked = register_buffer("num_batches_tracked", torch::tensor(0, torch::kLong));
  } else {
    running_mean = register_buffer("running_mean", torch::Tensor());
    running_var = register_buffer("running_var", torch::Tensor());
    num_batches_tracked = register_buffer("num_batches_tracked", torch::Tensor());
  }
}

double BatchNorm2dImpl::CountBatch() {
  if (!is_training() || !options.track_running_stats()) return 0;
  torch::NoGradGuard no_grad;
  num_batches_tracked += 1;
  return options.momentum().has_value() ? *options.momentum()
                                        : 1.0 / num_batches_tracked.item<double>();
}

torch::Tensor BatchNorm2dImpl::forward(const torch::Tensor& input) {
  TORCH_CHECK(input.dim() == 4, "expected 4D input (got ", input.dim(), "D input)");
  // As nn.SyncBatchNorm: only training-mode passes synchronise.
  if (replicas_ && is_training()) return SynchronizedForward(input);
  const double momentum = CountBatch();
  return torch::batch_norm(input, weight, bias, running_mean, running_var,
                           is_training() || !options.track_running_stats(), momentum,
                           options.eps(), at::globalContext().userEnabledCuDNN());
}

torch::Tensor BatchNorm2dImpl::SynchronizedForward(const torch::Tensor& input) {
  const GlobalStatistics global = GatherStatistics(input, *replicas_);
  if (const double momentum = CountBatch(); options.track_running_stats()) {
    torch::NoGradGuard no_grad;
    // The running variance is the unbiased one, as in every BatchNorm.
    running_mean.mul_(1 - momentum).add_(global.mean, momentum);
    running_var.mul_(1 - momentum)
        .add_(global.variance * (global.count / (global.count - 1)), momentum);
  }
  const torch::Tensor invstd = (global.variance + options.eps()).rsqrt();
  return SyncBatchNormFunction::apply(input, weight, bias, global.mean, invstd, global.count,
                                      replicas_.get());
}

void BatchNorm2dImpl::pretty_print(std::ostream& stream) const {
  stream << "pipeline::BatchNorm2d(" << options.num_features() << ", eps=" << options.eps()
         << ", momentum=";
  if (options.momentum().has_value()) {
    stream << *options.momentum();
  } else {
    stream << "None";
  }
  stream << ", affine=" << std::boolalpha << options.affine()
         << ", track_running_stats=" << options.track_running_stats()
         << (replicas_ ? ", synchronized" : "") << ")";
}

absl::StatusOr<int> SynchronizeBatchNorm(torch::nn::Module& model,
                                         std::shared_ptr<BatchNormReplicas> replicas) {
  int synchronized = 0;
  std::vector<std::string> foreign;
  auto visit = [&](const std::string& path, torch::nn::Module& module) {
    if (auto* ours = dynamic_cast<BatchNorm2dImpl*>(&module)) {
      ours->SynchronizeAcross(replicas);
      ++synchronized;
    } else if (dynamic_cast<torch::nn::BatchNorm1dImpl*>(&module) != nullptr ||
               dynamic_cast<torch::nn::BatchNorm2dImpl*>(&module) != nullptr ||
               dynamic_cast<torch::nn::BatchNorm3dImpl*>(&module) != nullptr) {
      foreign.push_back(absl::StrCat("`", path, "` (", module.name(), ")"));
    }
  };
  // Models are not always held by a shared_ptr, which named_modules()
  // needs to include the model itself.
  visit("", model);
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    visit(item.key(), *item.value());
  }
  if (!foreign.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sync_batch_norm: the model's BatchNorm layers ", absl::StrJoin(foreign, ", "),
        " cannot synchronise across ranks; a model plugin builds them as pipeline::BatchNorm2d "
        "(pipeline/layers/batch_norm.h) for that, or set sync_batch_norm: false"));
  }
  return synchronized;
}

}  // namespace pipeline
