#ifndef PIPELINE_IMAGE_IMAGE_CODEC_H_
#define PIPELINE_IMAGE_IMAGE_CODEC_H_

// JPEG (libjpeg, jpeg_codec.cc) and PNG (libpng, png_codec.cc) decoding into
// uint8 HWC images, and the encoders (TurboJPEG, libpng) the data-preparation
// tool writes with. Every failure is a Status that names the file and the
// reason; nothing aborts, and libpng's longjmp never crosses a C++ frame.
//
// Pixel values are decoded as stored (no gamma or ICC correction), which is
// what PIL and torchvision hand a model, so the same files give the same
// tensors as a PyTorch pipeline would.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "pipeline/interfaces/image.h"

namespace pipeline {

struct DecodeOptions {
  enum Color {
    // As stored: grayscale files give 1 channel, everything else 3
    // (palette expanded, alpha dropped).
    KEEP,
    // 1 channel; colour is reduced with ITU-R 601 luma, as PIL's convert("L").
    GRAY,
    // 3 channels; grayscale is replicated.
    RGB,
  };
  Color color = KEEP;
};

// Larger images are refused before any pixel memory is allocated, so a
// corrupt or hostile header cannot ask for gigabytes.
inline constexpr int kMaxImageSide = 32768;
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 28;
// Larger files are refused before they are read: a file is read whole
// before it is decoded, and no JPEG or PNG within the pixel limits above
// needs more (a 16-bit RGBA PNG at the limit, stored uncompressed, is 2 GiB,
// but real ones compress well below this).
inline constexpr int64_t kMaxImageFileBytes = int64_t{1} << 30;

// Decodes a whole JPEG or PNG file held in `bytes`; the format is taken from
// the magic bytes, not the file name. `path_for_errors` only names the file
// in messages. Thread-safe: each call uses its own decoder state.
absl::StatusOr<Image> DecodeImage(const std::string& bytes, const std::string& path_for_errors,
                                  const DecodeOptions& options = {});

// DecodeImage for a caller that will use only part of the image (a crop).
// `plan` is called once, with the image's size, before any pixel is decoded;
// a JPEG is then decoded only as far as the region it returns needs (the
// region's rows, and its columns rounded out to the file's 8 or 16-pixel
// blocks). The image returned holds the region at *region_in_image, with
// exactly the pixels DecodeImage gives there; errors are DecodeImage's, for
// any region. A PNG is decoded whole, and a region that does not lie inside
// the image is returned as planned with the whole image.
absl::StatusOr<Image> DecodeImageRegion(const std::string& bytes,
                                        const std::string& path_for_errors,
                                        const DecodeOptions& options, const RegionPlan& plan,
                                        ImageRegion* region_in_image);

// PNG of a 1-channel (gray) or 3-channel (RGB) uint8 image; lossless.
absl::StatusOr<std::string> EncodePng(const Image& image);

// Baseline JPEG of a 1- or 3-channel uint8 image, `quality` 1..100. Gray
// images are written as grayscale JPEGs; colour ones use 4:4:4 chroma at
// quality >= 90 and 4:2:0 below (ImageMagick's rule: subsampling undoes the
// point of asking for high quality).
absl::StatusOr<std::string> EncodeJpeg(const Image& image, int quality);

}  // namespace pipeline

#endif  // PIPELINE_IMAGE_IMAGE_CODEC_H_
