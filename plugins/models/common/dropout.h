#ifndef PIPELINE_INTERFACES_MODEL_SHAPE_H_
#define PIPELINE_INTERFACES_MODEL_SHAPE_H_

// Checks several model plugins' options share. The class and input channel
// counts every model takes are checked and resolved once, for all of them,
// by BuildModel (pipeline/weights/build_model.h).

#include "absl/status/status.h"

namespace pipeline {

// Rejects a dropout probability outside [0, 1) (NaN included), naming the
// `dropout` field.
absl::Status ValidateDropout(double dropout);

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_MODEL_SHAPE_H_
