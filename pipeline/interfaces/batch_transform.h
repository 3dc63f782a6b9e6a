#ifndef PIPELINE_INTERFACES_BATCH_TRANSFORM_H_
#define PIPELINE_INTERFACES_BATCH_TRANSFORM_H_

// A transform of whole training batches after collation (mixup, cutmix):
// it may mix images across the batch and give soft targets, class
// probabilities, in place of the hard labels. Validation is never mixed.

#include <cstdint>

#include "absl/status/status.h"
#include "pipeline/interfaces/random.h"
#include "pipeline/registry/registry.h"
#include "torch/types.h"

namespace pipeline {

class BatchTransform {
 public:
  virtual ~BatchTransform() = default;
  // `images`: N x C x H x W float32, changed in place. `targets`: N class
  // indices (int64), or N x classes probabilities from a batch transform
  // before this one; replaced by N x classes probabilities. `random` is
  // this batch's own (seeded from the run's seed, the step and the rank),
  // so a resumed run mixes as an uninterrupted one.
  virtual absl::Status Apply(torch::Tensor& images, torch::Tensor& targets,
                             SampleRandom& random) const = 0;
};

struct BatchTransformContext {
  // Classes in the training data (the soft targets' width).
  int64_t num_classes = 0;
};

template <>
struct PluginKind<BatchTransform> {
  static constexpr const char* kName = "batch_transform";
  using Context = BatchTransformContext;
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_BATCH_TRANSFORM_H_
