#include "pipeline/trainer/stop_vote.h"

#include <csignal>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace {

std::string SignalName(int signal) {
  const char* name = signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "signal";
  return absl::StrCat(name, " (", strsignal(signal), ")");
}

int OwnSignal(const TrainContext& context) {
  return context.options.stop_signal != nullptr ? context.options.stop_signal->load() : 0;
}

}  // namespace

absl::Status StopVoteHook::OnStepEnd(TrainContext& context, const StepReport&) {
  std::vector<double> votes = {OwnSignal(context) != 0 ? 1.0 : 0.0};
  RETURN_IF_ERROR(context.communicator().AllReduceSum(votes, "the stop vote"));
  context.stop_after_step = votes[0] > 0 && context.position.step < context.position.total_steps;
  return absl::OkStatus();
}

absl::Status StoppedBySignal(const TrainContext& context) {
  // Another rank's signal stops this one too, asked itself or not.
  const int own = OwnSignal(context);
  const int64_t step = context.position.step;
  return absl::CancelledError(absl::StrFormat(
      "stopped by %s after step %d (epoch %d), checkpoint_step_%d.pt written in %s; "
      "continue with --resume=auto",
      own != 0 ? SignalName(own) : "a signal to another rank", step, context.position.epoch + 1,
      step, context.output_dir.string()));
}

}  // namespace pipeline
