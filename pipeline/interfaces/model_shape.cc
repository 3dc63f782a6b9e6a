#include "pipeline/interfaces/model_shape.h"

#include "absl/strings/str_cat.h"

namespace pipeline {

absl::Status ValidateClassesAndChannels(int64_t num_classes, int64_t in_channels) {
  if (num_classes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_classes: ", num_classes,
                     " is negative; set a count, or 0 for the training data's classes"));
  }
  if (in_channels < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("in_channels: ", in_channels,
                     " is negative; set a count, or 0 for the training samples' channels"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelShape> ResolveModelShape(int64_t num_classes, int64_t in_channels,
                                             int64_t context_classes, int64_t context_channels) {
  ModelShape shape;
  shape.num_classes = num_classes ? num_classes : context_classes;
  if (shape.num_classes <= 0) {
    return absl::InvalidArgumentError(
        "num_classes: 0 takes the training data's class count, but it gives none; set "
        "num_classes");
  }
  shape.in_channels = in_channels ? in_channels : context_channels;
  if (shape.in_channels <= 0) {
    return absl::InvalidArgumentError(
        "in_channels: 0 takes the training samples' channel count, but they give none; set "
        "in_channels");
  }
  return shape;
}

absl::Status ValidateDropout(double dropout) {
  // Written to also reject NaN.
  if (!(dropout >= 0 && dropout < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dropout: ", dropout, " is not a probability in [0, 1); set 0 to disable dropout"));
  }
  return absl::OkStatus();
}

}  // namespace pipeline
