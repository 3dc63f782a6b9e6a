#ifndef PIPELINE_TRAINER_DATA_PIPELINE_H_
#define PIPELINE_TRAINER_DATA_PIPELINE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pipeline/config/pipeline.pb.h"
#include "pipeline/data/loader.h"
#include "pipeline/interfaces/batch_transform.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/interfaces/sampler.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/interfaces/transform.h"

namespace pipeline {

// One split's data: dataset, transforms, sampler and loader.
struct DataPipeline {
  std::unique_ptr<Dataset> dataset;
  std::vector<std::unique_ptr<Transform>> transforms;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<Loader> loader;
  // Training data only: applied by the training loop to each whole batch.
  std::vector<std::unique_ptr<BatchTransform>> batch_transforms;
};

// The data of config slot `path` ("train_data", "validation_data").
// Training samplers shard the data between the strategy's ranks;
// validation gives the whole set's order, which Evaluate splits. Validation
// labels follow `training_classes` by name (its folder may hold a subset of
// them); empty for the training data itself.
absl::StatusOr<DataPipeline> BuildData(const std::string& path, const DataConfig& config,
                                       const PipelineConfig& pipeline, Strategy& strategy,
                                       const std::vector<std::string>& training_classes = {});

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_DATA_PIPELINE_H_
