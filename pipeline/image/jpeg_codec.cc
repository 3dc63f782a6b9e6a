#include "pipeline/image/image_codec.h"

#include <turbojpeg.h>
// jpeglib.h needs size_t and FILE declared first.
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>

#include <algorithm>
#include <csetjmp>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "pipeline/image/image_codec_internal.h"

// JPEG decoding (libjpeg) and encoding (TurboJPEG).
//
// Decoding goes through libjpeg's own API, which can decode part of an image:
// jpeg_crop_scanline limits the columns run through the inverse DCT, colour
// conversion and upsampling, and jpeg_skip_scanlines passes over rows with
// only their entropy decoding. Every row is still entropy-decoded and the
// file read to its end, so a truncated or corrupt file fails whichever part
// is asked for. (The TurboJPEG API of this libjpeg-turbo version cannot
// crop; it is used for encoding only.)
//
// libjpeg reports errors by longjmp. As with libpng (png_codec.cc), each
// function that calls setjmp keeps no C++ object of its own alive and writes
// only through pointers into objects its caller owns.

namespace pipeline {
namespace {

using image_codec_internal::CheckEncodable;

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

}  // namespace

namespace image_codec_internal {

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

}  // namespace image_codec_internal

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
