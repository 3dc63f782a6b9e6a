// transform `to_float`: converts u8 pixels to f32, value * scale (by default
// 1/255, so [0, 255] becomes [0, 1] as torchvision's ToTensor). Transforms
// after it (normalize, ...) work on floats; geometric ones work on either, so
// resizing and cropping before it moves a quarter of the bytes. An image that
// is already float is an error: a second to_float would scale it twice.
//
//   transforms {
//     name: "to_float"
//     options { [type.googleapis.com/pipeline.ToFloatOptions] { scale: 0.00392156863 } }
//   }

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "plugins/transforms/to_float/to_float.pb.h"

namespace pipeline {
namespace {

class ToFloatTransform : public Transform {
 public:
  explicit ToFloatTransform(float scale) : scale_(scale) {}

  absl::Status Apply(Image& image, SampleRandom& random) const override {
    RETURN_IF_ERROR(image_ops::CheckImage(image, "to_float"));
    if (image.is_float()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "to_float: the image is already float (", image.ShapeString(),
          "); keep one to_float in the transforms, before those that need floats"));
    }
    const size_t count = image.u8.size();
    image.f32.resize(count);
    const uint8_t* in = image.u8.data();
    float* out = image.f32.data();
    for (size_t i = 0; i < count; ++i) out[i] = static_cast<float>(in[i]) * scale_;
    std::vector<uint8_t>().swap(image.u8);  // frees the memory, not just the size
    return absl::OkStatus();
  }

  std::optional<ChannelMap> AsChannelMap() const override {
    ChannelMap map;
    map.multiply = {scale_};
    map.takes_uint8 = true;
    map.takes_float = false;
    return map;
  }

 private:
  const float scale_;
};

absl::Status ValidateToFloatOptions(const ToFloatOptions& options) {
  if (!(options.scale() > 0 && std::isfinite(options.scale()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("to_float: scale must be > 0 and finite, got ", options.scale()));
  }
  return absl::OkStatus();
}

PIPELINE_REGISTER_PLUGIN(Transform, "to_float", ToFloatOptions,
                         "u8 pixels to f32, value * scale (default 1/255: [0, 1])",
                         [](const ToFloatOptions& options, const TransformContext&)
                             -> absl::StatusOr<std::unique_ptr<Transform>> {
                           return std::make_unique<ToFloatTransform>(options.scale());
                         },
                         ValidateToFloatOptions);

}  // namespace
}  // namespace pipeline
