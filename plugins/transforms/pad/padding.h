#ifndef PLUGINS_TRANSFORMS_PAD_PADDING_H_
#define PLUGINS_TRANSFORMS_PAD_PADDING_H_

// torchvision's F.pad for tensors, shared by the `pad` and `random_crop`
// transforms (which pads first, as torchvision's RandomCrop does).

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pipeline/interfaces/image.h"

namespace pipeline {
namespace padding {

enum class PaddingMode {
  // Every added pixel is `fill`.
  kConstant,
  // The nearest edge pixel repeated (torch's "replicate").
  kEdge,
  // Mirrored without repeating the edge pixel: 2 1 | 1 2 3 | 2 1. Each
  // padding must be smaller than the side it extends (as torch requires).
  kReflect,
  // Mirrored with the edge pixel repeated: 2 1 | 1 2 3 | 3 2. Each padding
  // must be at most the side it extends (as torchvision's _pad_symmetric).
  kSymmetric,
};

// Pixels added on each side.
struct Padding {
  int left = 0;
  int top = 0;
  int right = 0;
  int bottom = 0;
};

// torchvision's `padding` argument: 1 value pads all four sides, 2 values are
// (left and right, top and bottom), 4 are (left, top, right, bottom). Errors
// (another count, a negative value) start with `transform`.
absl::StatusOr<Padding> PaddingFromValues(const std::vector<int>& values,
                                          absl::string_view transform);

// `image` (which must pass image_ops::CheckImage) with `padding` added,
// keeping its type. On u8 images `fill` must be an integer in [0, 255] (a
// uint8 tensor cannot hold another value); on f32 images it is any finite
// number. Errors start with `transform`.
absl::StatusOr<Image> Pad(const Image& image, const Padding& padding, float fill,
                          PaddingMode mode, absl::string_view transform);

}  // namespace padding
}  // namespace pipeline

#endif  // PLUGINS_TRANSFORMS_PAD_PADDING_H_
