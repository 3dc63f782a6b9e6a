#ifndef PIPELINE_IMAGE_IMAGE_CODEC_INTERNAL_H_
#define PIPELINE_IMAGE_IMAGE_CODEC_INTERNAL_H_

// The seams between image_codec.cc (format sniffing, the entry points and
// the checks both formats share), jpeg_codec.cc (libjpeg, TurboJPEG) and
// png_codec.cc (libpng). Internal to //pipeline/image:image_codec.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pipeline/image/image_codec.h"
#include "pipeline/interfaces/image.h"

namespace pipeline {
namespace image_codec_internal {

inline const unsigned char* Data(const std::string& bytes) {
  return reinterpret_cast<const unsigned char*>(bytes.data());
}

// An error unless width x height is a real size within kMaxImageSide and
// kMaxImagePixels; `path` names the file (or the encoder) in messages.
absl::Status CheckDimensions(int64_t width, int64_t height, const std::string& path);

// Brings a decoded 1- or 3-channel image to the requested channel count.
void ConvertColor(DecodeOptions::Color color, Image* image);

// An error unless `image` is one EncodePng/EncodeJpeg can write; `format`
// ("PNG", "JPEG") begins the messages.
absl::Status CheckEncodable(const Image& image, const char* format);

// DecodeImageRegion for bytes that start with the JPEG magic.
absl::StatusOr<Image> DecodeJpeg(const std::string& bytes, const std::string& path,
                                 const DecodeOptions& options, const RegionPlan& plan,
                                 ImageRegion* region_in_image);

// DecodeImage for bytes that start with the PNG magic.
absl::StatusOr<Image> DecodePng(const std::string& bytes, const std::string& path,
                                const DecodeOptions& options);

}  // namespace image_codec_internal
}  // namespace pipeline

#endif  // PIPELINE_IMAGE_IMAGE_CODEC_INTERNAL_H_
