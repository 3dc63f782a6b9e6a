#ifndef PIPELINE_TRAINER_LOG_HOOKS_H_
#define PIPELINE_TRAINER_LOG_HOOKS_H_

// Where the figures of a run go: the progress lines, the JSON events and
// metrics.jsonl, TensorBoard, curves.svg. Each is a hook of its own; all
// of them run on rank 0 only.

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pipeline/reporting/curves_svg.h"
#include "pipeline/reporting/event_file_writer.h"
#include "pipeline/trainer/trainer_hook.h"

namespace pipeline {

// "12.34%" for fractions that are better higher (accuracies), "0.1234"
// for the rest (losses).
std::string FormatFigure(const Figure& figure);

// "loss 0.1234 acc 56.78%": the figures meant for a line, each name
// after `prefix` ("val_" turns loss into val_loss).
std::string FiguresText(const std::vector<Figure>& figures, const std::string& prefix = "");

// The step line (redrawn in place on a terminal) on logging steps, the
// epoch line, and the count of skipped steps at the end.
class ProgressHook : public TrainerHook {
 public:
  absl::Status OnStepEnd(TrainContext& context, const StepReport& step) override;
  absl::Status OnEpochEnd(TrainContext& context, EpochReport& epoch) override;
  absl::Status OnRunEnd(TrainContext& context, TrainSummary& summary) override;
};

// One JSON line per epoch and a summary line at the end, to
// RunOptions::events and appended to <output_dir>/metrics.jsonl.
class JsonEventsHook : public TrainerHook {
 public:
  // Opens metrics.jsonl for appending (a resumed run keeps the lines of
  // every start); an error when it cannot be written.
  static absl::StatusOr<std::unique_ptr<JsonEventsHook>> Create(const std::string& output_dir);

  absl::Status OnEpochEnd(TrainContext& context, EpochReport& epoch) override;
  absl::Status OnRunEnd(TrainContext& context, TrainSummary& summary) override;

 private:
  explicit JsonEventsHook(std::string path) : path_(std::move(path)) {}
  absl::Status Emit(TrainContext& context, const std::string& line);

  std::string path_;
  std::ofstream file_;
};

// TensorBoard scalars: train/<figure> on logging steps, epoch/train_<figure>
// and validation/<figure> after each epoch.
class TensorBoardHook : public TrainerHook {
 public:
  explicit TensorBoardHook(std::unique_ptr<EventFileWriter> writer) : writer_(std::move(writer)) {}
  absl::Status OnStepEnd(TrainContext& context, const StepReport& step) override;
  absl::Status OnEpochEnd(TrainContext& context, EpochReport& epoch) override;

 private:
  std::unique_ptr<EventFileWriter> writer_;
};

// <output_dir>/curves.svg: loss and accuracy per epoch, rewritten after
// every epoch so a run stopped early still has its plot. A resumed run
// starts from the epochs metrics.jsonl holds up to its checkpoint.
class CurvesHook : public TrainerHook {
 public:
  explicit CurvesHook(int64_t resumed_epochs) : resumed_epochs_(resumed_epochs) {}
  absl::Status OnRunStart(TrainContext& context) override;
  absl::Status OnEpochEnd(TrainContext& context, EpochReport& epoch) override;

 private:
  int64_t resumed_epochs_;
  std::vector<EpochPoint> points_;
};

// The epochs of a metrics file up to `completed_epochs`. An epoch trained
// twice (the run died after its metrics line, before its checkpoint)
// counts as its last line says.
std::vector<EpochPoint> EpochPointsOf(const std::string& metrics_path, int64_t completed_epochs);

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_LOG_HOOKS_H_
