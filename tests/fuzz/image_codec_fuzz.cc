// JPEG and PNG decoding of untrusted bytes, in each colour mode (picked by
// the input's first byte, so a mutation can switch it). What decodes must be
// a well-formed image within the advertised size limits.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "pipeline/image/image_codec.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  pipeline::DecodeOptions options;
  // The magic bytes come first in both formats, so the mode rides on the
  // last byte instead, where a changed value leaves the format intact.
  const int mode = size == 0 ? 0 : data[size - 1] % 3;
  options.color = static_cast<pipeline::DecodeOptions::Color>(mode);
  auto image = pipeline::DecodeImage(bytes, "fuzz.img", options);
  if (!image.ok()) return 0;
  FUZZ_CHECK(image->height > 0 && image->width > 0, image->ShapeString());
  FUZZ_CHECK(image->height <= pipeline::kMaxImageSide && image->width <= pipeline::kMaxImageSide,
             image->ShapeString());
  FUZZ_CHECK(static_cast<int64_t>(image->pixel_count()) <= pipeline::kMaxImagePixels,
             image->ShapeString());
  FUZZ_CHECK(image->channels == 1 || image->channels == 3, image->ShapeString());
  if (options.color == pipeline::DecodeOptions::GRAY) {
    FUZZ_CHECK(image->channels == 1, image->ShapeString());
  }
  if (options.color == pipeline::DecodeOptions::RGB) {
    FUZZ_CHECK(image->channels == 3, image->ShapeString());
  }
  FUZZ_CHECK(!image->is_float(), "a decoded image holds floats");
  FUZZ_CHECK(image->u8.size() == image->pixel_count() * image->channels,
             absl::StrCat(image->ShapeString(), " with ", image->u8.size(), " values"));
  return 0;
}
