#ifndef PIPELINE_IMAGE_SIZE_OPTIONS_H_
#define PIPELINE_IMAGE_SIZE_OPTIONS_H_

// The output-size fields that resize, center_crop and random_resized_crop
// share: `size`, or `height` and `width` together (which win over `size`).
// Templates over the options message, so each plugin keeps its own message.

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace pipeline {
namespace image_ops {

struct OutputSize {
  int height = 0;
  int width = 0;
};

// Checks that `size`, or both `height` and `width`, are set, and that what is
// set is > 0. Errors start with `transform`.
template <typename Options>
absl::Status ValidateSizeFields(absl::string_view transform, const Options& options) {
  if (options.has_height() != options.has_width()) {
    return absl::InvalidArgumentError(
        absl::StrCat(transform, ": set both height and width, or neither (only ",
                     options.has_height() ? "height" : "width", " is set)"));
  }
  if (!options.has_height() && !options.has_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(transform, ": set size, or both height and width (pixels)"));
  }
  if (options.has_size() && options.size() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(transform, ": size must be > 0 pixels, got ", options.size()));
  }
  if (options.has_height() && options.height() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(transform, ": height must be > 0 pixels, got ", options.height()));
  }
  if (options.has_width() && options.width() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(transform, ": width must be > 0 pixels, got ", options.width()));
  }
  return absl::OkStatus();
}

// height x width when both are set, else size x size (for crops, where `size`
// means a square). Assumes ValidateSizeFields passed.
template <typename Options>
OutputSize SquareOrExactSize(const Options& options) {
  if (options.has_height()) return {options.height(), options.width()};
  return {options.size(), options.size()};
}

}  // namespace image_ops
}  // namespace pipeline

#endif  // PIPELINE_IMAGE_SIZE_OPTIONS_H_
