#ifndef PLUGINS_TRANSFORMS_AUGMENT_OPS_WARP_OPTIONS_H_
#define PLUGINS_TRANSFORMS_AUGMENT_OPS_WARP_OPTIONS_H_

// The option checks random_rotation and random_affine share: ranges of
// angles as torchvision's _setup_angle reads them, the center a warp turns
// about, and its fill. Each error starts with the transform's name and
// names the field, so both plugins report their options alike.

#include <array>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace pipeline {
namespace augment_ops {

// A range [min, max] to draw from uniformly.
struct Range {
  double min = 0;
  double max = 0;
};

// OK when every value is finite.
absl::Status CheckFinite(absl::Span<const float> values, absl::string_view transform,
                         absl::string_view field);

// One value d >= 0: the range [-d, d].
absl::StatusOr<Range> SymmetricRange(float d, absl::string_view transform,
                                     absl::string_view field);

// [min, max] with min <= max.
absl::StatusOr<Range> OrderedRange(float min, float max, absl::string_view transform,
                                   absl::string_view field);

// _setup_angle: 1 value d >= 0 for [-d, d], or 2 for [min, max]; finite.
absl::StatusOr<Range> AngleRange(absl::Span<const float> values, absl::string_view transform,
                                 absl::string_view field);

// (x, y) from the top-left corner, or none (no values) for the image
// center.
absl::StatusOr<std::optional<std::array<double, 2>>> CenterOf(absl::Span<const float> values,
                                                              absl::string_view transform);

// The finite fill values; {0} when none are given (the default of
// torchvision's RandomRotation and RandomAffine).
absl::StatusOr<std::vector<float>> FillOf(absl::Span<const float> values,
                                          absl::string_view transform);

}  // namespace augment_ops
}  // namespace pipeline

#endif  // PLUGINS_TRANSFORMS_AUGMENT_OPS_WARP_OPTIONS_H_
