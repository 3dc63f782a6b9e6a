#ifndef PIPELINE_IMAGE_LIBPNG_WRITER_H_
#define PIPELINE_IMAGE_LIBPNG_WRITER_H_

// PNG files of the kinds the project's own encoder never writes (alpha,
// 16-bit samples, a palette), through libpng's simplified writer: test
// images and fuzz seeds for the decoder.

#include <png.h>

#include <string>

namespace pipeline {

// `format` is a PNG_FORMAT_* value; `colormap` and `colormap_entries` are for
// PNG_FORMAT_FLAG_COLORMAP. "" when libpng refuses.
inline std::string EncodePngWithLibpng(int width, int height, uint32_t format, const void* pixels,
                                       const void* colormap = nullptr, int colormap_entries = 0) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = width;
  image.height = height;
  image.format = format;
  image.colormap_entries = colormap_entries;
  png_alloc_size_t size = 0;
  if (!png_image_write_get_memory_size(image, size, 0, pixels, 0, colormap)) return "";
  std::string bytes(size, '\0');
  if (!png_image_write_to_memory(&image, bytes.data(), &size, 0, pixels, 0, colormap)) return "";
  bytes.resize(size);
  return bytes;
}

}  // namespace pipeline

#endif  // PIPELINE_IMAGE_LIBPNG_WRITER_H_
