#include "plugins/datasets/image_folder/image_codec.h"

#include <png.h>
#include <turbojpeg.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace pipeline {
namespace {

constexpr unsigned char kJpegMagic[] = {0xFF, 0xD8, 0xFF};
constexpr unsigned char kPngMagic[] = {0x89, 0x50, 0x4E, 0x47};

template <size_t N>
bool StartsWith(const std::string& bytes, const unsigned char (&magic)[N]) {
  return bytes.size() >= N && std::memcmp(bytes.data(), magic, N) == 0;
}

const unsigned char* Data(const std::string& bytes) {
  return reinterpret_cast<const unsigned char*>(bytes.data());
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

// ITU-R 601 luma in PIL's fixed-point form, so GRAY matches convert("L").
uint8_t Luma(const uint8_t* rgb) {
  return static_cast<uint8_t>((rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 0x8000) >> 16);
}

// Brings a decoded 1- or 3-channel image to the requested channel count.
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

// ---------------------------------------------------------------- JPEG

struct TjDestroyer {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using TjHandle = std::unique_ptr<void, TjDestroyer>;

struct TjFreer {
  void operator()(unsigned char* buffer) const { tjFree(buffer); }
};

// libjpeg warnings after which the pixels are still what the file meant:
// junk between markers (common in files from old cameras and editors, and
// accepted by PIL and browsers) and metadata we ignore anyway. Every other
// warning -- above all "Premature end of JPEG file", TurboJPEG's only signal
// for a truncated file -- means grey or garbage rows, so it is an error.
bool IsHarmlessJpegWarning(const std::string& message) {
  return absl::StrContains(message, "extraneous bytes before marker") ||
         absl::StrContains(message, "unknown JFIF revision") ||
         absl::StrContains(message, "bad ICC marker");
}

absl::StatusOr<Image> DecodeJpeg(const std::string& bytes, const std::string& path,
                                 const DecodeOptions& options) {
  TjHandle handle(tjInitDecompress());
  if (!handle) {
    return absl::InternalError(
        absl::StrCat(path, ": cannot start the JPEG decoder: ", tjGetErrorStr2(nullptr)));
  }
  // Both calls below return -1 for warnings too; only the harmful ones fail.
  // The message is read once: reading it clears TurboJPEG's per-handle copy.
  std::string message;
  auto failed = [&](int result) {
    if (result == 0) return false;
    const bool warning = tjGetErrorCode(handle.get()) == TJERR_WARNING;
    message = tjGetErrorStr2(handle.get());
    return !warning || !IsHarmlessJpegWarning(message);
  };
  auto corrupt = [&] {
    // 12-bit and lossless JPEGs are valid files this 8-bit build cannot read.
    if (absl::StartsWith(message, "Unsupported")) {
      return absl::UnimplementedError(
          absl::StrCat(path, ": unsupported kind of JPEG (libjpeg: ", message, ")"));
    }
    return absl::DataLossError(
        absl::StrCat(path, ": truncated or corrupt JPEG (libjpeg: ", message, ")"));
  };
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (failed(tjDecompressHeader3(handle.get(), Data(bytes), bytes.size(), &width, &height,
                                 &subsampling, &colorspace))) {
    return corrupt();
  }
  if (width <= 0 || height <= 0) {
    // A tables-only stream, or one cut off before its frame header.
    return absl::DataLossError(absl::StrCat(
        path, ": truncated or corrupt JPEG (no frame header, so no image size)"));
  }
  if (auto status = CheckDimensions(width, height, path); !status.ok()) return status;

  // TurboJPEG converts YCbCr and grayscale to either gray or RGB itself, but
  // CMYK/YCCK files only decode to CMYK; those are converted below.
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  int pixel_format = TJPF_RGB;
  if (cmyk) {
    pixel_format = TJPF_CMYK;
  } else if (options.color == DecodeOptions::GRAY ||
             (options.color == DecodeOptions::KEEP && colorspace == TJCS_GRAY)) {
    pixel_format = TJPF_GRAY;
  }
  const int decoded_channels = tjPixelSize[pixel_format];

  std::vector<uint8_t> pixels(static_cast<size_t>(width) * height * decoded_channels);
  // LIMITSCANS: a progressive file with thousands of scans takes minutes to
  // decode (a known denial of service); real files have about ten.
  if (failed(tjDecompress2(handle.get(), Data(bytes), bytes.size(), pixels.data(), width, 0,
                           height, pixel_format, TJFLAG_LIMITSCANS))) {
    return corrupt();
  }

  Image image;
  image.height = height;
  image.width = width;
  if (cmyk) {
    // Adobe-style (inverted) CMYK, which is what libjpeg hands out for
    // virtually every CMYK JPEG in the wild; the same formula as
    // libjpeg-turbo's own cmyk_to_rgb.
    image.channels = 3;
    image.u8.resize(image.pixel_count() * 3);
    for (size_t i = 0; i < image.pixel_count(); ++i) {
      const uint8_t* p = &pixels[4 * i];
      for (int c = 0; c < 3; ++c) {
        image.u8[3 * i + c] = static_cast<uint8_t>((p[c] * p[3] + 127) / 255);
      }
    }
  } else {
    image.channels = decoded_channels;
    image.u8 = std::move(pixels);
  }
  ConvertColor(options.color, &image);
  return image;
}

// ---------------------------------------------------------------- PNG
//
// libpng reports errors by longjmp. Everything between setjmp and a possible
// longjmp is plain C data: the functions that call setjmp keep no C++ object
// of their own alive, and write only through pointers into objects their
// callers own, so no destructor is skipped and no value is left indeterminate.

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

}  // namespace

absl::StatusOr<Image> DecodeImage(const std::string& bytes, const std::string& path_for_errors,
                                  const DecodeOptions& options) {
  if (bytes.empty()) {
    return absl::DataLossError(
        absl::StrCat(path_for_errors, ": empty file (0 bytes); expected a JPEG or PNG image"));
  }
  if (StartsWith(bytes, kJpegMagic)) return DecodeJpeg(bytes, path_for_errors, options);
  if (StartsWith(bytes, kPngMagic)) return DecodePng(bytes, path_for_errors, options);
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

absl::StatusOr<std::string> EncodePng(const Image& image) {
  if (auto status = CheckEncodable(image, "PNG"); !status.ok()) return status;
  std::string out;
  char error[kPngMessageSize] = "";
  if (!WritePng(image, &out, error)) {
    return absl::InternalError(absl::StrCat("PNG encoding failed (libpng: ", error, ")"));
  }
  return out;
}

absl::StatusOr<std::string> EncodeJpeg(const Image& image, int quality) {
  if (auto status = CheckEncodable(image, "JPEG"); !status.ok()) return status;
  if (quality < 1 || quality > 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("JPEG quality ", quality, " is outside 1..100"));
  }
  TjHandle handle(tjInitCompress());
  if (!handle) {
    return absl::InternalError(
        absl::StrCat("cannot start the JPEG encoder: ", tjGetErrorStr2(nullptr)));
  }
  const bool gray = image.channels == 1;
  const int subsampling = gray ? TJSAMP_GRAY : quality >= 90 ? TJSAMP_444 : TJSAMP_420;
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const int result = tjCompress2(handle.get(), image.u8.data(), image.width, 0, image.height,
                                 gray ? TJPF_GRAY : TJPF_RGB, &buffer, &size, subsampling,
                                 quality, TJFLAG_ACCURATEDCT);
  std::unique_ptr<unsigned char, TjFreer> owned(buffer);
  if (result != 0) {
    return absl::InternalError(
        absl::StrCat("JPEG encoding failed (libjpeg: ", tjGetErrorStr2(handle.get()), ")"));
  }
  return std::string(reinterpret_cast<const char*>(buffer), size);
}

}  // namespace pipeline
