#include "pipeline/image/image_codec.h"

#include <png.h>
#include <turbojpeg.h>
// jpeglib.h needs size_t and FILE declared first.
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>

#include <algorithm>
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
//
// Decoding goes through libjpeg's own API, which can decode part of an image:
// jpeg_crop_scanline limits the columns run through the inverse DCT, colour
// conversion and upsampling, and jpeg_skip_scanlines passes over rows with
// only their entropy decoding. Every row is still entropy-decoded and the
// file read to its end, so a truncated or corrupt file fails whichever part
// is asked for. (The TurboJPEG API of this libjpeg-turbo version cannot
// crop; it is used for encoding only.)
//
// libjpeg reports errors by longjmp. As with libpng below, each function that
// calls setjmp keeps no C++ object of its own alive and writes only through
// pointers into objects its caller owns.

struct TjDestroyer {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using TjHandle = std::unique_ptr<void, TjDestroyer>;

struct TjFreer {
  void operator()(unsigned char* buffer) const { tjFree(buffer); }
};

// A progressive file with thousands of scans takes minutes to decode (a
// known denial of service); real files have about ten. TurboJPEG's
// TJFLAG_LIMITSCANS uses the same limit.
constexpr int kMaxJpegScans = 500;

struct JpegErrors {
  jpeg_error_mgr manager;  // first: libjpeg hands callbacks a pointer to it
  jpeg_progress_mgr progress;
  jmp_buf jump;
  char error[JMSG_LENGTH_MAX];
  // The first warning that means damaged pixels (IsHarmlessJpegWarning);
  // libjpeg carries on after a warning.
  char warning[JMSG_LENGTH_MAX];
};

JpegErrors* ErrorsOf(j_common_ptr info) { return reinterpret_cast<JpegErrors*>(info->err); }

void OnJpegError(j_common_ptr info) {
  JpegErrors* errors = ErrorsOf(info);
  (*info->err->format_message)(info, errors->error);
  std::longjmp(errors->jump, 1);
}

// libjpeg warnings after which the pixels are still what the file meant:
// junk between markers (common in files from old cameras and editors, and
// accepted by PIL and browsers) and metadata we ignore anyway. Every other
// warning -- above all "Premature end of JPEG file", libjpeg's only signal
// for a truncated file -- means grey or garbage rows, so it is an error.
bool IsHarmlessJpegWarning(const char* message) {
  return absl::StrContains(message, "extraneous bytes before marker") ||
         absl::StrContains(message, "unknown JFIF revision") ||
         absl::StrContains(message, "bad ICC marker");
}

void OnJpegMessage(j_common_ptr info, int level) {
  JpegErrors* errors = ErrorsOf(info);
  if (level >= 0 || errors->warning[0] != '\0') return;  // trace messages, or one is known
  char message[JMSG_LENGTH_MAX];
  (*info->err->format_message)(info, message);
  if (!IsHarmlessJpegWarning(message)) std::snprintf(errors->warning, JMSG_LENGTH_MAX, "%s", message);
}

void OnJpegProgress(j_common_ptr info) {
  auto* decompress = reinterpret_cast<j_decompress_ptr>(info);
  if (decompress->input_scan_number > kMaxJpegScans) {
    JpegErrors* errors = ErrorsOf(info);
    std::snprintf(errors->error, sizeof(errors->error),
                  "Progressive JPEG image has more than %d scans", kMaxJpegScans);
    std::longjmp(errors->jump, 1);
  }
}

// Whether the header was read; JPEG_HEADER_OK or JPEG_HEADER_TABLES_ONLY in
// *result.
bool ReadJpegHeader(j_decompress_ptr info, JpegErrors* errors, const std::string* bytes,
                    int* result) {
  if (setjmp(errors->jump)) return false;
  jpeg_mem_src(info, reinterpret_cast<const unsigned char*>(bytes->data()),
               static_cast<unsigned long>(bytes->size()));
  *result = jpeg_read_header(info, FALSE);
  return true;
}

// The rows and columns of the image a decode produces.
struct JpegWindow {
  JDIMENSION left = 0;   // in: the first column wanted; out: the first decoded
  JDIMENSION width = 0;  // in: columns wanted; out: columns decoded
  JDIMENSION top = 0;
  JDIMENSION height = 0;
};

bool StartJpeg(j_decompress_ptr info, JpegErrors* errors, JpegWindow* window) {
  if (setjmp(errors->jump)) return false;
  jpeg_start_decompress(info);
  if (window->left != 0 || window->width != info->output_width) {
    jpeg_crop_scanline(info, &window->left, &window->width);
  }
  return true;
}

// Reads the window's rows into `pixels` (window.height rows of
// output_width * output_components values, then one spare row) and the rest
// of the file. Skipping to the very end would not decode the last rows'
// data, so the last row is read (into the spare row): every byte of the
// image is entropy-decoded, and a cut or corrupt file fails here as it would
// in a whole decode.
bool ReadJpegRows(j_decompress_ptr info, JpegErrors* errors, const JpegWindow* window,
                  uint8_t* pixels) {
  if (setjmp(errors->jump)) return false;
  if (window->top > 0) jpeg_skip_scanlines(info, window->top);
  const size_t stride = static_cast<size_t>(info->output_width) * info->output_components;
  while (info->output_scanline < window->top + window->height) {
    JSAMPROW row = pixels + (info->output_scanline - window->top) * stride;
    jpeg_read_scanlines(info, &row, 1);
  }
  if (info->output_scanline < info->output_height) {
    const JDIMENSION before_last = info->output_height - 1 - info->output_scanline;
    if (before_last > 0) jpeg_skip_scanlines(info, before_last);
    JSAMPROW spare = pixels + static_cast<size_t>(window->height) * stride;
    jpeg_read_scanlines(info, &spare, 1);
  }
  jpeg_finish_decompress(info);
  return true;
}

struct JpegDecompress {
  jpeg_decompress_struct info;
  JpegErrors errors;
  JpegDecompress() {
    info.err = jpeg_std_error(&errors.manager);
    errors.manager.error_exit = OnJpegError;
    errors.manager.emit_message = OnJpegMessage;
    errors.progress.progress_monitor = OnJpegProgress;
    errors.error[0] = errors.warning[0] = '\0';
    jpeg_create_decompress(&info);
    info.progress = &errors.progress;
  }
  ~JpegDecompress() { jpeg_destroy_decompress(&info); }
  JpegDecompress(const JpegDecompress&) = delete;
  JpegDecompress& operator=(const JpegDecompress&) = delete;
};

absl::Status CorruptJpeg(const std::string& path, const std::string& message) {
  // 12-bit and lossless JPEGs are valid files this 8-bit build cannot read.
  if (absl::StartsWith(message, "Unsupported")) {
    return absl::UnimplementedError(
        absl::StrCat(path, ": unsupported kind of JPEG (libjpeg: ", message, ")"));
  }
  return absl::DataLossError(
      absl::StrCat(path, ": truncated or corrupt JPEG (libjpeg: ", message, ")"));
}

// The region `plan` picks when it lies inside a height x width image;
// otherwise the whole image, which the caller's transform then rejects.
ImageRegion PlannedRegion(const RegionPlan& plan, int height, int width, bool* inside) {
  const ImageRegion region = plan(height, width);
  *inside = region.height > 0 && region.width > 0 && region.top >= 0 && region.left >= 0 &&
            region.top <= height - region.height && region.left <= width - region.width;
  return region;
}

absl::StatusOr<Image> DecodeJpeg(const std::string& bytes, const std::string& path,
                                 const DecodeOptions& options, const RegionPlan& plan,
                                 ImageRegion* region_in_image) {
  JpegDecompress decompress;
  jpeg_decompress_struct* info = &decompress.info;
  JpegErrors* errors = &decompress.errors;
  int header = 0;
  if (!ReadJpegHeader(info, errors, &bytes, &header)) return CorruptJpeg(path, errors->error);
  if (header != JPEG_HEADER_OK) {
    // A tables-only stream, or one cut off before its frame header.
    return absl::DataLossError(absl::StrCat(
        path, ": truncated or corrupt JPEG (no frame header, so no image size)"));
  }
  const int width = static_cast<int>(info->image_width);
  const int height = static_cast<int>(info->image_height);
  if (auto status = CheckDimensions(width, height, path); !status.ok()) return status;

  // libjpeg converts YCbCr and grayscale to either gray or RGB itself, but
  // CMYK/YCCK files only decode to CMYK; those are converted below.
  const bool cmyk = info->jpeg_color_space == JCS_CMYK || info->jpeg_color_space == JCS_YCCK;
  if (cmyk) {
    info->out_color_space = JCS_CMYK;
  } else if (options.color == DecodeOptions::GRAY ||
             (options.color == DecodeOptions::KEEP && info->jpeg_color_space == JCS_GRAYSCALE)) {
    info->out_color_space = JCS_GRAYSCALE;
  } else {
    info->out_color_space = JCS_RGB;
  }
  // libjpeg's defaults, which TurboJPEG and PIL use too: the accurate
  // integer DCT and fancy (smoothing) chroma upsampling.
  info->dct_method = JDCT_ISLOW;
  info->do_fancy_upsampling = TRUE;

  bool inside = false;
  *region_in_image = PlannedRegion(plan, height, width, &inside);
  JpegWindow window{0, static_cast<JDIMENSION>(width), 0, static_cast<JDIMENSION>(height)};
  if (inside) {
    // One column more on each side than the region: upsampled chroma at the
    // edge of a cropped decode is extrapolated, not what the whole image has
    // there, and the extra column keeps that out of the region.
    int left = std::max(0, region_in_image->left - 1);
    int right = std::min(width, region_in_image->left + region_in_image->width + 1);
    // And never narrower than two 16-pixel blocks: a crop whose chroma is
    // under 2 samples wide is upsampled another way than the whole row.
    constexpr int kMinWindow = 32;
    if (right - left < kMinWindow) {
      right = std::min(width, left + kMinWindow);
      left = std::max(0, right - kMinWindow);
    }
    window.left = static_cast<JDIMENSION>(left);
    window.width = static_cast<JDIMENSION>(right - left);
    window.top = static_cast<JDIMENSION>(region_in_image->top);
    window.height = static_cast<JDIMENSION>(region_in_image->height);
  }
  if (!StartJpeg(info, errors, &window)) return CorruptJpeg(path, errors->error);
  const int components = info->output_components;
  std::vector<uint8_t> pixels;
  try {
    pixels.resize(static_cast<size_t>(info->output_width) * (window.height + 1) * components);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(path, ": out of memory for the pixels"));
  }
  if (!ReadJpegRows(info, errors, &window, pixels.data())) return CorruptJpeg(path, errors->error);
  pixels.resize(static_cast<size_t>(info->output_width) * window.height * components);
  if (errors->warning[0] != '\0') return CorruptJpeg(path, errors->warning);
  if (inside) {
    region_in_image->top = 0;
    region_in_image->left -= static_cast<int>(window.left);
  }

  Image image;
  image.height = static_cast<int>(window.height);
  image.width = static_cast<int>(info->output_width);
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
    image.channels = components;
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
