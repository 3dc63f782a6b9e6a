#ifndef PIPELINE_TRAINER_VALIDATION_HOOK_H_
#define PIPELINE_TRAINER_VALIDATION_HOOK_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "pipeline/trainer/data_pipeline.h"
#include "pipeline/trainer/trainer_hook.h"

namespace pipeline {

struct Evaluation {
  std::vector<Figure> figures;
  int64_t samples = 0;
};

// The loss and metrics of `data` (at most `max_batches` batches, 0 = all),
// the set split between the ranks and the sums added across them: the
// figures of the whole set on every rank.
absl::StatusOr<Evaluation> Evaluate(TrainContext& context, DataPipeline& data,
                                    int64_t max_batches);

// After every trainer.validate_every_epochs epochs and after the last: the
// validation figures join the epoch's as val_<name>. Between validations
// the epoch carries the last ones (validated: false), as the events always
// did. With trainer.ema the average is validated too: val_<name>_ema.
class ValidationHook : public TrainerHook {
 public:
  explicit ValidationHook(DataPipeline validation) : data_(std::move(validation)) {}
  absl::Status OnEpochEnd(TrainContext& context, EpochReport& epoch) override;
  const Loader* loader() const { return data_.loader.get(); }

 private:
  DataPipeline data_;
  Evaluation last_;
  Evaluation last_ema_;  // of trainer.ema's average, when there is one
};

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_VALIDATION_HOOK_H_
