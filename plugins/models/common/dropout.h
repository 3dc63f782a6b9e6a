#ifndef PLUGINS_MODELS_COMMON_DROPOUT_H_
#define PLUGINS_MODELS_COMMON_DROPOUT_H_

// The `dropout` option every model with a dropout layer takes, checked as
// torch.nn.Dropout checks its p. (The class and input channel counts every
// model takes are checked and resolved once, for all of them, by BuildModel
// in pipeline/weights/build_model.h.)

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace pipeline {

// Rejects a dropout probability outside [0, 1] (NaN included), naming the
// `dropout` field. 1 is allowed, as torch allows it: every activation
// dropped in training.
absl::Status ValidateDropout(double dropout);

// The same check for a model whose option keeps torchvision's other name
// for it (DenseNet's `drop_rate`), naming `field`.
absl::Status ValidateDropout(double dropout, absl::string_view field);

}  // namespace pipeline

#endif  // PLUGINS_MODELS_COMMON_DROPOUT_H_
