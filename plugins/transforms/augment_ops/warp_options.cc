#include "plugins/transforms/augment_ops/warp_options.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace augment_ops {

absl::Status CheckFinite(absl::Span<const float> values, absl::string_view transform,
                         absl::string_view field) {
  for (float v : values) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(transform, ": ", field, " must be finite, got ", v));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Range> SymmetricRange(float d, absl::string_view transform,
                                     absl::string_view field) {
  if (d < 0) {
    return absl::InvalidArgumentError(absl::StrCat(transform, ": a single ", field,
                                                   " value d must be >= 0 (the range [-d, d]), "
                                                   "got ",
                                                   d));
  }
  return Range{-d, d};
}

absl::StatusOr<Range> OrderedRange(float min, float max, absl::string_view transform,
                                   absl::string_view field) {
  if (min > max) {
    return absl::InvalidArgumentError(absl::StrCat(transform, ": ", field,
                                                   " [min, max] must have min <= max, got [",
                                                   min, ", ", max, "]"));
  }
  return Range{min, max};
}

absl::StatusOr<Range> AngleRange(absl::Span<const float> values, absl::string_view transform,
                                 absl::string_view field) {
  RETURN_IF_ERROR(CheckFinite(values, transform, field));
  if (values.size() == 1) return SymmetricRange(values[0], transform, field);
  if (values.size() == 2) return OrderedRange(values[0], values[1], transform, field);
  return absl::InvalidArgumentError(absl::StrCat(transform, ": ", field,
                                                 " takes 1 value d (the range [-d, d]) or 2 "
                                                 "([min, max]), got ",
                                                 values.size()));
}

absl::StatusOr<std::optional<std::array<double, 2>>> CenterOf(absl::Span<const float> values,
                                                              absl::string_view transform) {
  RETURN_IF_ERROR(CheckFinite(values, transform, "center"));
  if (values.empty()) return std::optional<std::array<double, 2>>();
  if (values.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        transform, ": center takes 2 values (x, y), or none for the image center, got ",
        values.size()));
  }
  return std::array<double, 2>{values[0], values[1]};
}

absl::StatusOr<std::vector<float>> FillOf(absl::Span<const float> values,
                                          absl::string_view transform) {
  RETURN_IF_ERROR(CheckFinite(values, transform, "fill"));
  if (values.empty()) return std::vector<float>{0.0f};
  return std::vector<float>(values.begin(), values.end());
}

}  // namespace augment_ops
}  // namespace pipeline
