#include "pipeline/image/image_codec.h"

#include <png.h>

#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "pipeline/image/image_codec_internal.h"

// PNG decoding and encoding (libpng).
//
// libpng reports errors by longjmp. Everything between setjmp and a possible
// longjmp is plain C data: the functions that call setjmp keep no C++ object
// of their own alive, and write only through pointers into objects their
// callers own, so no destructor is skipped and no value is left indeterminate.

namespace pipeline {
namespace {

using image_codec_internal::CheckEncodable;
using image_codec_internal::Data;

constexpr size_t kPngMessageSize = 200;

void OnPngError(png_structp png, png_const_charp message) {
  std::snprintf(static_cast<char*>(png_get_error_ptr(png)), kPngMessageSize, "%s", message);
  png_longjmp(png, 1);
}

// Warnings (an sRGB profile libpng dislikes, a bad ancillary-chunk CRC) leave
// the pixels intact; PIL ignores them too.
void OnPngWarning(png_structp, png_const_charp) {}

struct PngSource {
  const unsigned char* data;
  size_t size;
  size_t offset;
};

void ReadPngBytes(png_structp png, png_bytep out, png_size_t length) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (source->size - source->offset < length) png_error(png, "unexpected end of file");
  std::memcpy(out, source->data + source->offset, length);
  source->offset += length;
}

struct PngPixels {
  uint32_t width = 0;
  uint32_t height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;
  std::vector<png_bytep> rows;
};

enum class PngReadResult { kOk, kTooLarge, kError };

bool ResizeNoThrow(PngPixels* out, size_t rowbytes) {
  try {
    out->pixels.resize(rowbytes * out->height);
    out->rows.resize(out->height);
  } catch (const std::bad_alloc&) {
    return false;
  }
  for (uint32_t y = 0; y < out->height; ++y) out->rows[y] = &out->pixels[y * rowbytes];
  return true;
}

// Decodes to 8-bit gray or RGB as stored: 16-bit scaled down, palettes and
// sub-byte gray expanded, alpha (and tRNS transparency) dropped, no gamma
// correction (as PIL and torchvision do).
PngReadResult ReadPngPixels(const std::string& bytes, PngPixels* out, char* error) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, error, OnPngError, OnPngWarning);
  if (png == nullptr) {
    std::snprintf(error, kPngMessageSize, "cannot start the PNG decoder");
    return PngReadResult::kError;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    std::snprintf(error, kPngMessageSize, "cannot start the PNG decoder");
    return PngReadResult::kError;
  }
  PngSource source{Data(bytes), bytes.size(), 0};
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return PngReadResult::kError;
  }
  png_set_read_fn(png, &source, ReadPngBytes);
  png_read_info(png, info);
  out->width = png_get_image_width(png, info);
  out->height = png_get_image_height(png, info);
  if (out->width > static_cast<uint32_t>(kMaxImageSide) ||
      out->height > static_cast<uint32_t>(kMaxImageSide) ||
      int64_t{out->width} * out->height > kMaxImagePixels) {
    png_destroy_read_struct(&png, &info, nullptr);
    return PngReadResult::kTooLarge;
  }
  const int color_type = png_get_color_type(png, info);
  const int bit_depth = png_get_bit_depth(png, info);
  if (bit_depth == 16) png_set_scale_16(png);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  // palette_to_rgb turns tRNS into an alpha channel; strip that as well.
  if ((color_type & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS)) {
    png_set_strip_alpha(png);
  }
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  out->channels = png_get_channels(png, info);
  if ((out->channels != 1 && out->channels != 3) || png_get_bit_depth(png, info) != 8) {
    png_error(png, "unsupported pixel layout after conversion to 8-bit gray/RGB");
  }
  if (!ResizeNoThrow(out, png_get_rowbytes(png, info))) png_error(png, "out of memory");
  png_read_image(png, out->rows.data());
  // png_read_end is skipped on purpose: it only checks chunks after the
  // pixels, and a file whose pixels are complete is usable without them.
  png_destroy_read_struct(&png, &info, nullptr);
  return PngReadResult::kOk;
}

uint32_t BigEndian32(const std::string& bytes, size_t offset) {
  const unsigned char* p = Data(bytes) + offset;
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

bool AppendNoThrow(std::string* out, const png_bytep data, size_t length) {
  try {
    out->append(reinterpret_cast<const char*>(data), length);
  } catch (const std::bad_alloc&) {
    return false;
  }
  return true;
}

void WritePngBytes(png_structp png, png_bytep data, png_size_t length) {
  if (!AppendNoThrow(static_cast<std::string*>(png_get_io_ptr(png)), data, length)) {
    png_error(png, "out of memory");
  }
}

void FlushPng(png_structp) {}

bool WritePng(const Image& image, std::string* out, char* error) {
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, error, OnPngError, OnPngWarning);
  if (png == nullptr) {
    std::snprintf(error, kPngMessageSize, "cannot start the PNG encoder");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    std::snprintf(error, kPngMessageSize, "cannot start the PNG encoder");
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, out, WritePngBytes, FlushPng);
  png_set_IHDR(png, info, image.width, image.height, 8,
               image.channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const size_t stride = static_cast<size_t>(image.width) * image.channels;
  for (int y = 0; y < image.height; ++y) {
    png_write_row(png, const_cast<png_bytep>(&image.u8[y * stride]));
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace

namespace image_codec_internal {

absl::StatusOr<Image> DecodePng(const std::string& bytes, const std::string& path,
                                const DecodeOptions& options) {
  // The size is checked from IHDR (always the first chunk) before libpng
  // runs: png_read_info reads on up to the pixel data, so a huge image's
  // header would otherwise first be reported as whatever follows it.
  if (bytes.size() >= 24 && bytes.compare(12, 4, "IHDR") == 0) {
    if (auto status = CheckDimensions(BigEndian32(bytes, 16), BigEndian32(bytes, 20), path);
        !status.ok() && status.code() != absl::StatusCode::kDataLoss) {
      return status;  // a zero size is left to libpng, which names the problem
    }
  }
  PngPixels png;
  char error[kPngMessageSize] = "";
  switch (ReadPngPixels(bytes, &png, error)) {
    case PngReadResult::kError:
      return absl::DataLossError(
          absl::StrCat(path, ": truncated or corrupt PNG (libpng: ", error, ")"));
    case PngReadResult::kTooLarge:
      return CheckDimensions(png.width, png.height, path);
    case PngReadResult::kOk:
      break;
  }
  if (auto status = CheckDimensions(png.width, png.height, path); !status.ok()) return status;
  Image image;
  image.height = static_cast<int>(png.height);
  image.width = static_cast<int>(png.width);
  image.channels = png.channels;
  image.u8 = std::move(png.pixels);
  ConvertColor(options.color, &image);
  return image;
}

}  // namespace image_codec_internal

absl::StatusOr<std::string> EncodePng(const Image& image) {
  if (auto status = CheckEncodable(image, "PNG"); !status.ok()) return status;
  std::string out;
  char error[kPngMessageSize] = "";
  if (!WritePng(image, &out, error)) {
    return absl::InternalError(absl::StrCat("PNG encoding failed (libpng: ", error, ")"));
  }
  return out;
}

}  // namespace pipeline
