#ifndef PIPELINE_TRAINER_OUTPUT_WRITE_ERRORS_H_
#define PIPELINE_TRAINER_OUTPUT_WRITE_ERRORS_H_

// What a failed write into output_dir during training does, under
// checkpoint.on_write_error: STOP ends the run with the error, saying what
// to do about it and where --resume=auto would continue from; CONTINUE
// prints a warning and a write_error event, and training goes on.
//
//   checkpoint { every_steps: 100 on_write_error: CONTINUE }

#include <functional>
#include <iosfwd>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "pipeline/config/pipeline.pb.h"

namespace pipeline {

class OutputWriteErrors {
 public:
  // `print` shows one log line (no newline); `events` takes the JSON events
  // and may be null.
  OutputWriteErrors(CheckpointConfig::WriteErrorPolicy policy, std::string output_dir,
                    std::function<void(const std::string&)> print, std::ostream* events);

  // The checkpoint --resume=auto would continue from now, named in the
  // errors; none ("") until one is written or resumed from.
  void set_resume_point(std::string path) { resume_point_ = std::move(path); }

  // `written`, the outcome of writing checkpoint `path`. Errors pass under
  // STOP, and whenever `may_continue` is false (the run is stopping anyway);
  // under CONTINUE they are warned about, each time, and OK is returned.
  absl::Status Checkpoint(const absl::Status& written, const std::string& path,
                          bool may_continue = true);

  // The same for a file appended to or rewritten as the run goes
  // (metrics.jsonl, curves.svg, the TensorBoard events), warned about once
  // under CONTINUE: an appended log, torn once, is not written again, and
  // the plot, tried every epoch, would only repeat the warning.
  absl::Status Log(const absl::Status& written, const std::string& path);

 private:
  absl::Status Handle(const absl::Status& written, const std::string& path, const char* what,
                      bool may_continue, bool warn);

  const CheckpointConfig::WriteErrorPolicy policy_;
  const std::string output_dir_;
  const std::function<void(const std::string&)> print_;
  std::ostream* const events_;
  std::string resume_point_;
  std::set<std::string> warned_;
};

// OK while `stream` (writing `path`) is good, else "cannot write <path>:
// <reason>" with the errno its last write left (kResourceExhausted for a
// full disk, as WriteCheckpoint's errors).
absl::Status StreamWriteStatus(const std::ostream& stream, const std::string& path);

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_OUTPUT_WRITE_ERRORS_H_
