#ifndef PIPELINE_TESTING_IMAGE_CHECKS_H_
#define PIPELINE_TESTING_IMAGE_CHECKS_H_

// Image comparisons and checks the conformance suites share. Written here
// independently of pipeline/image, whose code the suites check.

#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/image.h"

namespace pipeline {
namespace testing {

// Bitwise: float values compared by their bits, so -0 != 0 and NaN == NaN.
inline bool Same(const Image& a, const Image& b) {
  return a.height == b.height && a.width == b.width && a.channels == b.channels &&
         a.u8 == b.u8 && a.f32.size() == b.f32.size() &&
         (a.f32.empty() || std::memcmp(a.f32.data(), b.f32.data(), a.f32.size() * 4) == 0);
}

inline std::string Describe(const Image& image) {
  return absl::StrCat(image.ShapeString(), image.is_float() ? " f32" : " u8");
}

inline std::string RegionString(const ImageRegion& r) {
  return absl::StrCat("{top ", r.top, ", left ", r.left, ", ", r.height, "x", r.width, "}");
}

// Non-empty, one pixel type, as many values as its shape says; `what`
// names it in the error ("image", "output").
inline absl::Status WellFormed(const Image& image, const std::string& what) {
  if (image.height <= 0 || image.width <= 0 || image.channels <= 0) {
    return absl::InternalError(absl::StrCat("the ", what, " is empty: ", image.ShapeString()));
  }
  if (!image.u8.empty() && !image.f32.empty()) {
    return absl::InternalError(absl::StrCat("the ", what, " holds both u8 and f32 pixels"));
  }
  const size_t expected = image.pixel_count() * image.channels;
  const size_t held = image.is_float() ? image.f32.size() : image.u8.size();
  if (held != expected) {
    return absl::InternalError(absl::StrCat("the ", image.ShapeString(), " ", what, " holds ",
                                            held, " values, not ", expected));
  }
  return absl::OkStatus();
}

inline bool Inside(const ImageRegion& region, int height, int width) {
  return region.top >= 0 && region.left >= 0 && region.height > 0 && region.width > 0 &&
         region.top + region.height <= height && region.left + region.width <= width;
}

// A copy of `region` of `image` (which it lies inside).
inline Image Cut(const Image& image, const ImageRegion& region) {
  Image out;
  out.height = region.height;
  out.width = region.width;
  out.channels = image.channels;
  const size_t row = static_cast<size_t>(region.width) * image.channels;
  for (int y = 0; y < region.height; ++y) {
    const size_t from =
        (static_cast<size_t>(region.top + y) * image.width + region.left) * image.channels;
    if (image.is_float()) {
      out.f32.insert(out.f32.end(), image.f32.begin() + from, image.f32.begin() + from + row);
    } else {
      out.u8.insert(out.u8.end(), image.u8.begin() + from, image.u8.begin() + from + row);
    }
  }
  return out;
}

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_IMAGE_CHECKS_H_
