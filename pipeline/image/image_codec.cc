#include "pipeline/image/image_codec.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "pipeline/image/image_codec_internal.h"

namespace pipeline {
namespace {

using image_codec_internal::Data;
using image_codec_internal::DecodeJpeg;
using image_codec_internal::DecodePng;

constexpr unsigned char kJpegMagic[] = {0xFF, 0xD8, 0xFF};
constexpr unsigned char kPngMagic[] = {0x89, 0x50, 0x4E, 0x47};

template <size_t N>
bool StartsWith(const std::string& bytes, const unsigned char (&magic)[N]) {
  return bytes.size() >= N && std::memcmp(bytes.data(), magic, N) == 0;
}

// What an unrecognised file starts with: quoted text when it looks like text
// (a mislabelled HTML error page or a Git LFS pointer is the usual culprit),
// else hex bytes.
std::string DescribeStart(const std::string& bytes) {
  const std::string head = bytes.substr(0, 8);
  bool printable = true;
  for (char c : head) printable &= absl::ascii_isprint(static_cast<unsigned char>(c)) != 0;
  if (printable) return absl::StrCat("starts with \"", head, "\", which looks like text");
  std::vector<std::string> hex;
  for (char c : head) {
    hex.push_back(absl::StrCat(absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2)));
  }
  return absl::StrCat("starts with bytes ", absl::StrJoin(hex, " "));
}

// Formats that show up in scraped image folders under a .jpg or .png name.
// Naming them tells the user to convert the file, where "unknown format"
// would send them looking for corruption.
const char* OtherImageFormat(const std::string& bytes) {
  auto at = [&](size_t offset, absl::string_view text) {
    return bytes.size() >= offset + text.size() &&
           absl::string_view(bytes).substr(offset, text.size()) == text;
  };
  if (at(0, "GIF87a") || at(0, "GIF89a")) return "GIF";
  if (at(0, "RIFF") && at(8, "WEBP")) return "WebP";
  if (at(0, absl::string_view("II*\0", 4)) || at(0, absl::string_view("MM\0*", 4))) return "TIFF";
  if (at(4, "ftypavif") || at(4, "ftypavis")) return "AVIF";
  if (at(4, "ftypheic") || at(4, "ftypheix") || at(4, "ftypmif1")) return "HEIF";
  // "BM" alone starts too much text; the DIB header size pins it down.
  if (at(0, "BM") && bytes.size() >= 18) {
    const uint32_t dib = uint32_t{Data(bytes)[14]} | uint32_t{Data(bytes)[15]} << 8 |
                         uint32_t{Data(bytes)[16]} << 16 | uint32_t{Data(bytes)[17]} << 24;
    if (dib == 12 || dib == 40 || dib == 52 || dib == 56 || dib == 64 || dib == 108 ||
        dib == 124) {
      return "BMP";
    }
  }
  return nullptr;
}

// ITU-R 601 luma in PIL's fixed-point form, so GRAY matches convert("L").
uint8_t Luma(const uint8_t* rgb) {
  return static_cast<uint8_t>((rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 0x8000) >> 16);
}

}  // namespace

namespace image_codec_internal {

absl::Status CheckDimensions(int64_t width, int64_t height, const std::string& path) {
  if (width <= 0 || height <= 0) {
    return absl::DataLossError(
        absl::StrCat(path, ": corrupt image header: size ", width, "x", height));
  }
  if (width > kMaxImageSide || height > kMaxImageSide || width * height > kMaxImagePixels) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": image too large: ", width, "x", height, " (the limit is ", kMaxImageSide,
        " pixels per side and ", kMaxImagePixels, " pixels in all)"));
  }
  return absl::OkStatus();
}

void ConvertColor(DecodeOptions::Color color, Image* image) {
  if (color == DecodeOptions::GRAY && image->channels == 3) {
    std::vector<uint8_t> gray(image->pixel_count());
    for (size_t i = 0; i < gray.size(); ++i) gray[i] = Luma(&image->u8[3 * i]);
    image->u8 = std::move(gray);
    image->channels = 1;
  } else if (color == DecodeOptions::RGB && image->channels == 1) {
    std::vector<uint8_t> rgb(image->pixel_count() * 3);
    for (size_t i = 0; i < image->pixel_count(); ++i) {
      rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = image->u8[i];
    }
    image->u8 = std::move(rgb);
    image->channels = 3;
  }
}

absl::Status CheckEncodable(const Image& image, const char* format) {
  if (image.is_float()) {
    return absl::InvalidArgumentError(
        absl::StrCat(format, " encoding needs a uint8 image, not float"));
  }
  if (image.channels != 1 && image.channels != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        format, " encoding needs 1 (gray) or 3 (RGB) channels, not ", image.channels));
  }
  if (image.width <= 0 || image.height <= 0 ||
      image.u8.size() != image.pixel_count() * image.channels) {
    return absl::InvalidArgumentError(absl::StrCat(format, " encoding: image ",
                                                   image.ShapeString(), " holds ",
                                                   image.u8.size(), " values"));
  }
  return CheckDimensions(image.width, image.height, absl::StrCat(format, " encoding"));
}

}  // namespace image_codec_internal

absl::StatusOr<Image> DecodeImageRegion(const std::string& bytes,
                                        const std::string& path_for_errors,
                                        const DecodeOptions& options, const RegionPlan& plan,
                                        ImageRegion* region_in_image) {
  if (bytes.empty()) {
    return absl::DataLossError(
        absl::StrCat(path_for_errors, ": empty file (0 bytes); expected a JPEG or PNG image"));
  }
  if (StartsWith(bytes, kJpegMagic)) {
    return DecodeJpeg(bytes, path_for_errors, options, plan, region_in_image);
  }
  if (StartsWith(bytes, kPngMagic)) {
    absl::StatusOr<Image> image = DecodePng(bytes, path_for_errors, options);
    if (image.ok()) *region_in_image = plan(image->height, image->width);
    return image;
  }
  if (const char* format = OtherImageFormat(bytes); format != nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        path_for_errors, ": ", format, " image (whatever its name says), which is not supported; supported "
        "formats: JPEG, PNG. Convert it (e.g. ImageMagick's `convert in.gif out.png`) or "
        "remove it"));
  }
  return absl::InvalidArgumentError(absl::StrCat(path_for_errors, ": unknown image format (",
                                                 DescribeStart(bytes),
                                                 "); supported formats: JPEG, PNG"));
}

absl::StatusOr<Image> DecodeImage(const std::string& bytes, const std::string& path_for_errors,
                                  const DecodeOptions& options) {
  ImageRegion whole;
  return DecodeImageRegion(
      bytes, path_for_errors, options,
      [](int height, int width) { return ImageRegion{0, 0, height, width}; }, &whole);
}

}  // namespace pipeline
