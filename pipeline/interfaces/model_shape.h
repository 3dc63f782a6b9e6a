#ifndef PIPELINE_INTERFACES_MODEL_SHAPE_H_
#define PIPELINE_INTERFACES_MODEL_SHAPE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pipeline {

// The class and input channel counts a model is built with.
struct ModelShape {
  int64_t num_classes = 0;
  int64_t in_channels = 0;
};

// Rejects a negative num_classes or in_channels option (0 means "take it from
// the training data").
absl::Status ValidateClassesAndChannels(int64_t num_classes, int64_t in_channels);

// Rejects a dropout probability outside [0, 1) (NaN included), naming the
// `dropout` field.
absl::Status ValidateDropout(double dropout);

// Resolves options left at 0 from the training data's class count and sample
// channels (ModelContext::num_classes and ModelContext::input_channels);
// fails when a count is still not positive.
absl::StatusOr<ModelShape> ResolveModelShape(int64_t num_classes, int64_t in_channels,
                                             int64_t context_classes, int64_t context_channels);

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_MODEL_SHAPE_H_
