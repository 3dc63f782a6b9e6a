#ifndef PIPELINE_WEIGHTS_BUILD_MODEL_H_
#define PIPELINE_WEIGHTS_BUILD_MODEL_H_

#include <cstdint>
#include <iosfwd>
#include <memory>

#include "absl/status/status.h"
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
//
// num_classes and in_channels are the config's where set (> 0), else the
// data's; either still not positive is an error naming model.num_classes
// or model.in_channels. The plugin's factory gets both resolved in its
// ModelContext and never sees weights or freeze_backbone.
absl::StatusOr<std::unique_ptr<Model>> BuildModel(const ModelConfig& config,
                                                  const ModelInputs& inputs);

// Checks the fields every model takes, without building anything or
// reading a file, so a config can be refused before a run starts: negative
// counts, freeze_backbone without weights. Every problem is reported, one a
// line, each naming its field ("model.freeze_backbone: ..."). The plugin's
// own options are the registry's to check (Registry<Model>::Validate).
// BuildModel runs it too.
absl::Status ValidateModelConfig(const ModelConfig& config);

}  // namespace pipeline

#endif  // PIPELINE_WEIGHTS_BUILD_MODEL_H_
