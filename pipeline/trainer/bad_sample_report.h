#ifndef PIPELINE_TRAINER_BAD_SAMPLE_REPORT_H_
#define PIPELINE_TRAINER_BAD_SAMPLE_REPORT_H_

// What `on_bad_sample: SKIP` skipped, told at the end of every epoch and of
// the run. A skipped file is a problem in the data that the user has to
// fix, so it is named, not just counted; the lists are bounded so that a
// folder of broken files does not flood the log.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pipeline/data/loader.h"

namespace pipeline {

class BadSampleReport {
 public:
  // The lines for one split ("train_data", "validation_data") at the end of
  // epoch `epoch` (0-based) of `epochs`, and adds them to the run's tally.
  // `job_count`: samples skipped by every process together; `own`: this
  // process's list. No lines when nothing was skipped.
  std::vector<std::string> EndEpoch(int64_t epoch, int64_t epochs, const std::string& split,
                                    int64_t job_count, const SkippedSamples& own,
                                    int world_size);

  // The lines for the end of the run, one block per split that was checked.
  std::vector<std::string> Summary() const;

  // Samples skipped by every process over the run (a file that fails in
  // every epoch counts once per epoch).
  int64_t total() const;

 private:
  struct Tally {
    int64_t skipped = 0;
    int64_t epochs = 0;
    int world_size = 1;
    std::set<int64_t> distinct;             // this process's
    std::vector<std::string> first_errors;  // of `distinct`, first seen first
  };
  std::map<std::string, Tally> tallies_;
};

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_BAD_SAMPLE_REPORT_H_
