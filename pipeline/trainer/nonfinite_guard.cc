#include "pipeline/trainer/nonfinite_guard.h"

#include <vector>

#include "ATen/ops/stack.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace {

// Below it, gradients are not finite at any scale: the run has diverged.
constexpr double kSmallestLossScale = 1.0 / (1 << 24);

}  // namespace

// One float sum per gradient (a single read of it: a fraction of a
// momentum SGD update's cost, and less than a double sum's): a NaN or Inf
// element makes it non-finite, and a sum that only overflowed is told apart
// by an exact look at that one gradient.
std::string FirstNonFiniteGradient(Model& model) {
  std::vector<at::Tensor> grads;
  std::vector<std::string> names;
  std::vector<at::Tensor> sums;
  for (const auto& parameter : model.named_parameters()) {
    const at::Tensor& grad = parameter.value().grad();
    if (!grad.defined()) continue;
    grads.push_back(grad);
    names.push_back(parameter.key());
    sums.push_back(grad.sum());
  }
  if (sums.empty()) return "";
  const at::Tensor finite = at::stack(sums).isfinite().cpu();
  if (finite.all().item<bool>()) return "";
  for (size_t i = 0; i < names.size(); ++i) {
    if (finite[static_cast<int64_t>(i)].item<bool>()) continue;
    if (grads[i].isfinite().all().item<bool>()) continue;
    return absl::StrCat("the gradient of parameter ", names[i], " holds ",
                        grads[i].isnan().any().item<bool>() ? "NaN" : "Inf");
  }
  return "";
}

absl::StatusOr<std::string> NonFiniteGuard::NonFiniteLossOfAnyRank(
    TrainContext& context, std::optional<double> nonfinite_loss) {
  const int world = context.communicator().world_size();
  if (world == 1) {
    return nonfinite_loss ? absl::StrFormat("the training loss is %f", *nonfinite_loss) : "";
  }
  std::vector<double> flags(world, 0.0);
  flags[context.communicator().rank()] = nonfinite_loss ? 1 : 0;
  RETURN_IF_ERROR(context.communicator().AllReduceSum(flags, "the non-finite loss vote"));
  std::vector<int> ranks;
  for (int r = 0; r < world; ++r) {
    if (flags[r] > 0) ranks.push_back(r);
  }
  if (ranks.empty()) return "";
  return absl::StrCat("the training loss of rank", ranks.size() > 1 ? "s " : " ",
                      absl::StrJoin(ranks, ", "), " is not finite");
}

absl::StatusOr<bool> NonFiniteGuard::ApplyStep(TrainContext& context,
                                               std::optional<double> nonfinite_loss) {
  ASSIGN_OR_RETURN(const std::string loss_problem,
                   NonFiniteLossOfAnyRank(context, nonfinite_loss));
  if (!loss_problem.empty()) {
    RETURN_IF_ERROR(SkipStep(context, loss_problem));
    return false;
  }
  if (context.scaler() != nullptr) context.scaler()->Unscale(context.model().parameters());
  const std::string gradient_problem = FirstNonFiniteGradient(context.model());
  if (gradient_problem.empty()) {
    skipped_in_a_row_ = 0;
    return true;
  }
  // Under loss scaling the scale was too large for float16: GradScaler's
  // skipped step, with a smaller scale for the next.
  RETURN_IF_ERROR(context.scaler() != nullptr ? SkipScalerStep(context, gradient_problem)
                                            : SkipStep(context, gradient_problem));
  return false;
}

absl::Status NonFiniteGuard::SkipScalerStep(TrainContext& context, const std::string& what) {
  GradScaler& scaler = *context.scaler();
  const double scale = scaler.scale();
  const TrainPosition& at = context.position;
  scaler.Update(/*found_inf=*/true);
  context.optimizer().zero_grad();
  ++context.skipped_steps;
  if (scaler.scale() < kSmallestLossScale) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "step %d (epoch %d): %s even at loss scale %g; the training has diverged. Lower the "
        "learning rate (optimizer.options.lr) or add warm-up (learning_rate.warmup_epochs)",
        at.step + 1, at.epoch + 1, what, scale));
  }
  context.progress.Line(absl::StrFormat(
      "step %d (epoch %d): %s at loss scale %g; skipped this optimizer step, loss scale now "
      "%g (%d skipped so far)",
      at.step + 1, at.epoch + 1, what, scale, scaler.scale(), context.skipped_steps));
  return absl::OkStatus();
}

absl::Status NonFiniteGuard::SkipStep(TrainContext& context, const std::string& what) {
  const TrainerConfig& trainer = context.config().trainer();
  const TrainPosition& at = context.position;
  // Before the optimizer writes NaN into the weights; the checkpoints
  // written so far stay as they are.
  if (trainer.on_nonfinite() == TrainerConfig::STOP) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "step %d (epoch %d): %s; stopped before the weights were updated. Lower the learning "
        "rate (optimizer.options.lr) or add warm-up (learning_rate.warmup_epochs), or leave "
        "such steps out with trainer.on_nonfinite: SKIP_STEP",
        at.step + 1, at.epoch + 1, what));
  }
  context.optimizer().zero_grad();
  ++context.skipped_steps;
  ++skipped_in_a_row_;
  if (skipped_in_a_row_ > trainer.max_consecutive_skipped_steps()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "step %d (epoch %d): %s; %d steps in a row were skipped for non-finite values (more "
        "than trainer.max_consecutive_skipped_steps: %d), %d in all; stopped. Lower the "
        "learning rate (optimizer.options.lr) or add warm-up (learning_rate.warmup_epochs)",
        at.step + 1, at.epoch + 1, what, skipped_in_a_row_,
        trainer.max_consecutive_skipped_steps(), context.skipped_steps));
  }
  context.progress.Line(absl::StrFormat(
      "step %d (epoch %d): %s; skipped this optimizer step (%d skipped so far, %d in a row)",
      at.step + 1, at.epoch + 1, what, context.skipped_steps, skipped_in_a_row_));
  return absl::OkStatus();
}

}  // namespace pipeline
