#include "pipeline/trainer/run_hooks.h"

#include <ostream>

#include "pipeline/trainer/json_object.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {

absl::Status ProfilerHook::OnStepEnd(TrainContext& context, const StepReport& step) {
  if (!profile_.active()) return absl::OkStatus();
  if (!profile_.Record(step.data_seconds, step.compute_seconds, step.update_seconds, step.images,
                       step.communication_wait_seconds)) {
    return absl::OkStatus();
  }
  // Every rank reports its own: a slow rank is what a profile looks for.
  const std::string report = profile_.Report(context.communicator().rank());
  if (context.primary) {
    context.progress.Line(report);
  } else if (context.options.log != nullptr) {
    *context.options.log << report << "\n";
  }
  return absl::OkStatus();
}

absl::Status BadSampleHook::OnEpochEnd(TrainContext& context, EpochReport& epoch) {
  const bool train_skips = context.config().train_data().on_bad_sample() == DataConfig::SKIP;
  const Loader* validation = epoch.validated ? validation_ : nullptr;
  const bool validation_skips =
      validation != nullptr && context.config().validation_data().on_bad_sample() == DataConfig::SKIP;
  if (!train_skips && !validation_skips) return absl::OkStatus();
  std::vector<double> counts = {static_cast<double>(train_.skipped().count),
                                validation ? static_cast<double>(validation->skipped().count) : 0};
  RETURN_IF_ERROR(context.communicator().AllReduceSum(counts, "sum of the skipped samples"));
  const int world = context.communicator().world_size();
  const int64_t index = epoch.epoch - 1, epochs = context.position.epochs;
  std::vector<std::string> lines;
  if (train_skips) {
    lines = report_.EndEpoch(index, epochs, "train_data", static_cast<int64_t>(counts[0]),
                             train_.skipped(), world);
  }
  if (validation_skips) {
    for (std::string& line : report_.EndEpoch(index, epochs, "validation_data",
                                              static_cast<int64_t>(counts[1]),
                                              validation->skipped(), world)) {
      lines.push_back(std::move(line));
    }
  }
  for (const std::string& line : lines) context.progress.Line(line);
  if (context.events != nullptr) {
    *context.events << JsonObject()
                           .Add("event", "bad_samples")
                           .Add("epoch", epoch.epoch)
                           .Add("train_skipped", static_cast<int64_t>(counts[0]))
                           .Add("validation_skipped", static_cast<int64_t>(counts[1]))
                           .ToString()
                    << "\n"
                    << std::flush;
  }
  return absl::OkStatus();
}

absl::Status BadSampleHook::OnRunEnd(TrainContext& context, TrainSummary& summary) {
  for (const std::string& line : report_.Summary()) context.progress.Line(line);
  summary.skipped_samples = report_.total();
  return absl::OkStatus();
}

}  // namespace pipeline
