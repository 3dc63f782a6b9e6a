#ifndef PIPELINE_TRAINER_RUN_OPTIONS_H_
#define PIPELINE_TRAINER_RUN_OPTIONS_H_

// What a caller of Train (trainer.h) asks of a run besides its config, and
// what it gets back: the hooks and the run's set-up read these without the
// training loop itself.

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/interfaces/metric_value.h"

namespace pipeline {

struct TrainSummary {
  int64_t epochs = 0;
  int64_t steps = 0;
  double train_loss = 0;      // mean over the last epoch
  double train_accuracy = 0;  // over the last epoch
  double val_loss = 0;        // last validation pass; 0 without validation data
  double val_accuracy = 0;
  // Every figure of the last epoch: train_loss, train_acc, ..., val_loss,
  // val_acc, ... (one per configured metric value).
  std::vector<MetricValue> figures;
  double images_per_sec = 0;  // training images over training time, all processes
  double wall_seconds = 0;
  // Samples that failed to load and were skipped (on_bad_sample: SKIP), all
  // processes, all epochs.
  int64_t skipped_samples = 0;
  // Optimizer steps left out for a non-finite loss or gradient
  // (trainer.on_nonfinite: SKIP_STEP), in this run since it started or
  // resumed.
  int64_t skipped_steps = 0;
};

struct RunOptions {
  // Build every plugin and check the data, then stop before training.
  bool dry_run = false;
  // Time the first this many optimizer steps by phase (waiting for data,
  // forward+backward, optimizer step) and print where the time went, each
  // rank its own line. 0 = off.
  int64_t profile_steps = 0;
  // Progress and messages (rank 0 only).
  std::ostream* log = nullptr;
  // Machine-readable JSON lines: one per epoch and a final summary.
  std::ostream* events = nullptr;
  // Continue a run: "auto" = from the latest good checkpoint in output_dir
  // (a fresh start when there is none), otherwise a checkpoint's path.
  // "" = start fresh.
  std::string resume;
  // Recorded in run_info.jsonl in output_dir, one line per start: the
  // command line, and a folder of the source tree whose git revision is
  // recorded ("" = the working directory).
  std::vector<std::string> command_line;
  std::string source_dir;
  // The signal (SIGINT, SIGTERM) that asked the run to stop, 0 while none
  // did; set from a signal handler. With checkpoint.checkpoint_on_signal,
  // the run writes a step checkpoint after the current step and returns a
  // kCancelled error naming the signal. Null: never asked.
  const std::atomic<int>* stop_signal = nullptr;
};

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_RUN_OPTIONS_H_
