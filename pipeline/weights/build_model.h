#ifndef PIPELINE_WEIGHTS_BUILD_MODEL_H_
#define PIPELINE_WEIGHTS_BUILD_MODEL_H_

#include <cstdint>
#include <iosfwd>
#include <memory>

#include "absl/status/statusor.h"
#include "pipeline/config/pipeline.pb.h"
#include "pipeline/interfaces/model.h"

namespace pipeline {

// What the data tells a model, and how its weights are set.
struct ModelInputs {
  // Classes in the training data and channels of a transformed training
  // sample: used where the config's num_classes / in_channels are 0.
  int64_t data_classes = 0;
  int64_t data_channels = 0;
  // Whether `weights` is loaded (and the backbone frozen). Off where the
  // caller restores the weights itself (predict, a resumed run's replicas,
  // export from a checkpoint), so the original file need not exist any more.
  bool load_weights = true;
  // Where loading pretrained weights says what it skipped and froze.
  std::ostream* log = nullptr;
};

// The model of `config` (a model plugin and the options every model takes:
// ModelConfig): the plugin built for the resolved number of classes and
// input channels, then config.weights loaded and, under freeze_backbone,
// every parameter outside the plugin's head_prefixes() frozen.
absl::StatusOr<std::unique_ptr<Model>> BuildModel(const ModelConfig& config,
                                                  const ModelInputs& inputs);

}  // namespace pipeline

#endif  // PIPELINE_WEIGHTS_BUILD_MODEL_H_
