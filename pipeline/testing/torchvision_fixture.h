#ifndef PIPELINE_TESTING_TORCHVISION_FIXTURE_H_
#define PIPELINE_TESTING_TORCHVISION_FIXTURE_H_

// Reads the fixtures tools/fixtures/torchvision_transforms.py writes (an
// input image and torchvision's output for it, in CHW text) and compares a
// transform's output with them. Used by the tests of pad, random_crop,
// color_jitter, random_erasing and gaussian_blur; it lives here, beside the
// first of them, because it is shared by plugin tests only.

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "pipeline/interfaces/image.h"

namespace pipeline {
namespace testing {

struct TorchvisionFixture {
  std::string call;  // the fixture's first line: the torchvision call
  Image input;
  Image output;
};

namespace torchvision_fixture_internal {

// One "<kind> <uint8|float32> C H W" header and its CHW values, as HWC.
inline bool ReadImage(std::istream& in, const std::string& kind, Image& image) {
  std::string got_kind, dtype;
  int c = 0, h = 0, w = 0;
  if (!(in >> got_kind >> dtype >> c >> h >> w) || got_kind != kind || c <= 0 || h <= 0 ||
      w <= 0) {
    return false;
  }
  image.height = h;
  image.width = w;
  image.channels = c;
  const size_t count = static_cast<size_t>(c) * h * w;
  const bool is_float = dtype == "float32";
  if (is_float) {
    image.f32.assign(count, 0.0f);
  } else {
    image.u8.assign(count, 0);
  }
  for (int ch = 0; ch < c; ++ch) {
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        std::string token;
        if (!(in >> token)) return false;
        const size_t at = (static_cast<size_t>(y) * w + x) * c + ch;
        if (is_float) {
          image.f32[at] = std::strtof(token.c_str(), nullptr);
        } else {
          image.u8[at] = static_cast<uint8_t>(std::atoi(token.c_str()));
        }
      }
    }
  }
  return true;
}

}  // namespace torchvision_fixture_internal

// `path` relative to the workspace root (the test's working directory),
// e.g. "plugins/transforms/pad/testdata/torchvision_pad_edge_u8.txt".
// Fails the test (and returns an empty fixture) when the file is unreadable.
inline TorchvisionFixture ReadTorchvisionFixture(const std::string& path) {
  TorchvisionFixture fixture;
  std::ifstream file(path);
  EXPECT_TRUE(file.good()) << "cannot open " << path;
  std::getline(file, fixture.call);
  EXPECT_TRUE(torchvision_fixture_internal::ReadImage(file, "input", fixture.input))
      << path << ": malformed input";
  EXPECT_TRUE(torchvision_fixture_internal::ReadImage(file, "output", fixture.output))
      << path << ": malformed output";
  return fixture;
}

// Whether `actual` has `expected`'s shape and type and every value lies
// within `tolerance` of it (u8 values in counts, f32 values absolute); the
// message names how many differ, the largest difference and the first place.
inline ::testing::AssertionResult ImagesNear(const Image& actual, const Image& expected,
                                             double tolerance) {
  if (actual.height != expected.height || actual.width != expected.width ||
      actual.channels != expected.channels || actual.is_float() != expected.is_float()) {
    return ::testing::AssertionFailure()
           << "shape " << actual.ShapeString() << (actual.is_float() ? " f32" : " u8")
           << ", expected " << expected.ShapeString() << (expected.is_float() ? " f32" : " u8");
  }
  const size_t n = actual.is_float() ? actual.f32.size() : actual.u8.size();
  const size_t expected_n = expected.is_float() ? expected.f32.size() : expected.u8.size();
  if (n != expected_n) return ::testing::AssertionFailure() << "value counts differ";
  size_t differing = 0, first = 0;
  double largest = 0;
  for (size_t i = 0; i < n; ++i) {
    const double a = actual.is_float() ? actual.f32[i] : actual.u8[i];
    const double e = expected.is_float() ? expected.f32[i] : expected.u8[i];
    const double d = std::fabs(a - e);
    if (!(d <= tolerance)) {
      if (differing++ == 0) first = i;
      if (!(d <= largest)) largest = d;
    }
  }
  if (differing == 0) return ::testing::AssertionSuccess();
  const int c = actual.channels;
  const size_t pixel = first / c;
  const double a = actual.is_float() ? actual.f32[first] : actual.u8[first];
  const double e = expected.is_float() ? expected.f32[first] : expected.u8[first];
  return ::testing::AssertionFailure()
         << differing << " of " << n << " values differ by more than " << tolerance
         << " (largest " << largest << "), the first at y " << pixel / actual.width << ", x "
         << pixel % actual.width << ", channel " << first % c << ": " << a << ", expected " << e;
}

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_TORCHVISION_FIXTURE_H_
