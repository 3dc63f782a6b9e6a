#include "plugins/transforms/augment_ops/augment_ops.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pipeline/image/test_images.h"
#include "pipeline/testing/torchvision_fixture.h"
#include "pipeline/util/simd.h"
#include "plugins/transforms/augment_ops/affine.h"
#include "plugins/transforms/augment_ops/color_ops.h"

namespace pipeline {
namespace {

using ::pipeline::augment_ops::Interpolation;
using ::pipeline::augment_ops::Op;
using ::pipeline::augment_ops::OpCall;
using ::pipeline::augment_ops::OpRange;
using ::pipeline::augment_ops::Warp;
using ::pipeline::testing::TorchvisionFixture;

constexpr char kTestdata[] = "plugins/transforms/augment_ops/testdata/torchvision_";

const std::vector<float> kColor = {10, 200, 77};

Warp Nearest(std::vector<float> fill = {}) { return {Interpolation::kNearest, std::move(fill)}; }
Warp Bilinear(std::vector<float> fill = {}) {
  return {Interpolation::kBilinear, std::move(fill)};
}

struct OpCase {
  const char* fixture;  // testdata/torchvision_augment_<fixture>.txt
  OpCall call;
  Warp warp;
};

// The calls tools/fixtures/torchvision_transforms.py made, by fixture name.
const std::vector<OpCase>& OpCases() {
  static const auto* cases = new std::vector<OpCase>{
      {"identity", {Op::kIdentity, 0.0}, Nearest()},
      {"shear_x_0p3_nearest", {Op::kShearX, 0.3}, Nearest()},
      {"shear_x_m0p45_bilinear", {Op::kShearX, -0.45}, Bilinear()},
      {"shear_x_0p99_bilinear_fill", {Op::kShearX, 0.99}, Bilinear(kColor)},
      {"shear_y_0p62_bilinear_fill", {Op::kShearY, 0.62}, Bilinear(kColor)},
      {"shear_y_m0p2_nearest_fill", {Op::kShearY, -0.2}, Nearest({255})},
      {"translate_x_3_nearest", {Op::kTranslateX, 3.0}, Nearest()},
      {"translate_x_m4p6_bilinear_fill", {Op::kTranslateX, -4.6}, Bilinear({128})},
      {"translate_y_2p9_bilinear", {Op::kTranslateY, 2.9}, Bilinear()},
      {"translate_y_m5_nearest_fill", {Op::kTranslateY, -5.0}, Nearest(kColor)},
      {"rotate_30_nearest", {Op::kRotate, 30.0}, Nearest()},
      {"rotate_m71p5_bilinear_fill", {Op::kRotate, -71.5}, Bilinear(kColor)},
      {"rotate_13p5_bilinear", {Op::kRotate, 13.5}, Bilinear()},
      {"brightness_0p37", {Op::kBrightness, 0.37}, Nearest()},
      {"brightness_m0p6", {Op::kBrightness, -0.6}, Nearest()},
      {"color_0p5", {Op::kColor, 0.5}, Nearest()},
      {"color_m0p8", {Op::kColor, -0.8}, Nearest()},
      {"contrast_0p45", {Op::kContrast, 0.45}, Nearest()},
      {"contrast_m0p7", {Op::kContrast, -0.7}, Nearest()},
      {"sharpness_0p9", {Op::kSharpness, 0.9}, Nearest()},
      {"sharpness_m0p6", {Op::kSharpness, -0.6}, Nearest()},
      {"posterize_3", {Op::kPosterize, 3.0}, Nearest()},
      {"posterize_6", {Op::kPosterize, 6.0}, Nearest()},
      {"solarize_127p5", {Op::kSolarize, 127.5}, Nearest()},
      {"solarize_42", {Op::kSolarize, 42.0}, Nearest()},
      {"autocontrast", {Op::kAutoContrast, 0.0}, Nearest()},
      {"equalize", {Op::kEqualize, 0.0}, Nearest()},
      {"equalize_full", {Op::kEqualize, 0.0}, Nearest()},
      {"gray_shear_x_0p5_bilinear", {Op::kShearX, 0.5}, Bilinear()},
      {"gray_rotate_m20_nearest_fill", {Op::kRotate, -20.0}, Nearest({90})},
      {"gray_color_0p9", {Op::kColor, 0.9}, Nearest()},
      {"gray_contrast_0p45", {Op::kContrast, 0.45}, Nearest()},
      {"gray_sharpness_0p75", {Op::kSharpness, 0.75}, Nearest()},
      {"gray_posterize_2", {Op::kPosterize, 2.0}, Nearest()},
      {"gray_solarize_200", {Op::kSolarize, 200.0}, Nearest()},
      {"gray_autocontrast", {Op::kAutoContrast, 0.0}, Nearest()},
      {"gray_equalize", {Op::kEqualize, 0.0}, Nearest()},
      {"large_rotate_23_bilinear", {Op::kRotate, 23.0}, Bilinear()},
      {"large_shear_y_m0p33_nearest", {Op::kShearY, -0.33}, Nearest()},
  };
  return *cases;
}

TorchvisionFixture Fixture(const std::string& name) {
  return testing::ReadTorchvisionFixture(kTestdata + name + ".txt");
}

// Every op matches torchvision's output for the same (op, magnitude,
// interpolation, fill) bit for bit, 1-channel images included: tolerance 0
// throughout. The float32 arithmetic is torch's op for op (the fused
// multiply-adds of its AVX2 grid_sample included), and where torch's order
// is unknown (sharpness's conv2d sum) it cannot change the rounding.
TEST(AugmentOpsTest, EachOpMatchesTorchvision) {
  for (const OpCase& c : OpCases()) {
    SCOPED_TRACE(c.fixture);
    const TorchvisionFixture fixture = Fixture(std::string("augment_") + c.fixture);
    Image image = fixture.input;
    ASSERT_TRUE(augment_ops::ApplyOp(image, c.call, c.warp).ok());
    EXPECT_TRUE(testing::ImagesNear(image, fixture.output, 0)) << fixture.call;
  }
}

// One space of torchvision_augmentation_spaces.txt: its header line and,
// per op, "<name> <signed|unsigned> <scalar | n v0 ... v(n-1)>".
struct FixtureSpace {
  std::string header;
  std::vector<std::string> names;
  std::vector<bool> is_signed;
  std::vector<std::vector<float>> magnitudes;  // empty for "scalar"
};

std::vector<FixtureSpace> ReadSpaces() {
  std::ifstream file(std::string(kTestdata) + "augmentation_spaces.txt");
  EXPECT_TRUE(file.good());
  std::vector<FixtureSpace> spaces;
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string name, kind, count;
    in >> name >> kind;
    if (name == "trivial_augment_wide" || name == "rand_augment") {
      spaces.push_back({line, {}, {}, {}});
      continue;
    }
    FixtureSpace& space = spaces.back();
    space.names.push_back(name);
    space.is_signed.push_back(kind == "signed");
    in >> count;
    std::vector<float> values;
    for (std::string v; count != "scalar" && in >> v;) {
      values.push_back(std::strtof(v.c_str(), nullptr));
    }
    space.magnitudes.push_back(values);
  }
  return spaces;
}

std::vector<OpRange> SpaceFor(const std::string& header) {
  std::istringstream in(header);
  std::string kind;
  int bins = 0, height = 0, width = 0;
  in >> kind >> bins >> height >> width;
  if (kind == "trivial_augment_wide") return augment_ops::TrivialAugmentWideSpace(bins);
  return augment_ops::RandAugmentSpace(bins, height, width);
}

// The magnitude tables are torchvision's to the bit (float32 linspace
// included), for several bin counts and image sizes.
TEST(AugmentOpsTest, SpacesMatchTorchvision) {
  const std::vector<FixtureSpace> spaces = ReadSpaces();
  ASSERT_EQ(spaces.size(), 8u);
  for (const FixtureSpace& expected : spaces) {
    SCOPED_TRACE(expected.header);
    const std::vector<OpRange> space = SpaceFor(expected.header);
    ASSERT_EQ(space.size(), expected.names.size());
    for (size_t i = 0; i < space.size(); ++i) {
      SCOPED_TRACE(expected.names[i]);
      EXPECT_EQ(augment_ops::OpName(space[i].op), expected.names[i]);
      EXPECT_EQ(space[i].is_signed, expected.is_signed[i]);
      ASSERT_EQ(space[i].num_bins, static_cast<int>(expected.magnitudes[i].size()));
      for (int bin = 0; bin < space[i].num_bins; ++bin) {
        EXPECT_EQ(augment_ops::MagnitudeAt(space[i], bin), expected.magnitudes[i][bin])
            << "bin " << bin;
      }
    }
  }
}

TEST(AugmentOpsTest, ChooseOpSignsOnlySignedOpsAndScalarsAreZero) {
  const std::vector<OpRange> space = augment_ops::TrivialAugmentWideSpace(31);
  const OpCall rotate = augment_ops::ChooseOp(space[5], 30, /*negate=*/true);
  EXPECT_EQ(rotate.op, Op::kRotate);
  EXPECT_EQ(rotate.magnitude, -135.0);
  const OpCall solarize = augment_ops::ChooseOp(space[11], 30, /*negate=*/true);
  EXPECT_EQ(solarize.op, Op::kSolarize);
  EXPECT_EQ(solarize.magnitude, 0.0);
  const OpCall equalize = augment_ops::ChooseOp(space[13], 0, /*negate=*/true);
  EXPECT_EQ(equalize.op, Op::kEqualize);
  EXPECT_EQ(equalize.magnitude, 0.0);
}

TEST(AugmentOpsTest, OpsLeaveSmallAndConstantImagesAsTorchvisionDoes) {
  // Sharpness needs 3x3; a constant channel has no contrast to stretch and
  // no histogram step.
  Image small = testing::CountingU8Image(2, 5, 3);
  const Image small_before = small;
  augment_ops::AdjustSharpness(small, 1.9);
  EXPECT_EQ(small.u8, small_before.u8);
  Image flat = testing::U8Image(3, 3, 1, std::vector<uint8_t>(9, 77));
  augment_ops::AutoContrast(flat);
  augment_ops::Equalize(flat);
  EXPECT_EQ(flat.u8, std::vector<uint8_t>(9, 77));
}

// The nearest u8 warp as torch computes it, pixel by pixel: the grid's
// float32 products and sums, grid_sample's fused unnormalization, round half
// to even, then the source pixel or the fill. WarpAffine computes it by rows,
// without library calls, copying runs; it must give the same bytes.
Image ReferenceNearestWarp(const Image& in, const augment_ops::AffineMatrix& m, int out_h,
                           int out_w, const std::vector<float>& fill) {
  Image out = testing::U8Image(out_h, out_w, in.channels,
                               std::vector<uint8_t>(size_t(out_h) * out_w * in.channels));
  const float half_w = static_cast<float>(0.5 * in.width);
  const float half_h = static_cast<float>(0.5 * in.height);
  for (int y = 0; y < out_h; ++y) {
    for (int x = 0; x < out_w; ++x) {
      const float bx = static_cast<float>(-out_w * 0.5 + 0.5) + x;
      const float by = static_cast<float>(-out_h * 0.5 + 0.5) + y;
      float gx = bx * (static_cast<float>(m[0]) / half_w);
      gx = gx + by * (static_cast<float>(m[1]) / half_w);
      gx = gx + static_cast<float>(m[2]) / half_w;
      float gy = bx * (static_cast<float>(m[3]) / half_h);
      gy = gy + by * (static_cast<float>(m[4]) / half_h);
      gy = gy + static_cast<float>(m[5]) / half_h;
      const float sx = std::nearbyint(std::fma(gx + 1.0f, static_cast<float>(in.width) / 2, -0.5f));
      const float sy =
          std::nearbyint(std::fma(gy + 1.0f, static_cast<float>(in.height) / 2, -0.5f));
      const bool inside = sx >= 0 && sx < in.width && sy >= 0 && sy < in.height;
      for (int ch = 0; ch < in.channels; ++ch) {
        const float f = fill.empty() ? 0.0f : fill[fill.size() == 1 ? 0 : ch];
        out.u8[(size_t(y) * out_w + x) * in.channels + ch] =
            inside ? in.u8[(size_t(sy) * in.width + size_t(sx)) * in.channels + ch]
                   : static_cast<uint8_t>(std::nearbyint(f));
      }
    }
  }
  return out;
}

TEST(AugmentOpsTest, NearestU8WarpsGiveTorchsTapsPixelForPixel) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (int trial = 0; trial < 2000; ++trial) {
    const int h = 1 + rng() % 64, w = 1 + rng() % 64, c = trial % 3 == 0 ? 1 : 3;
    const double angle = 3.2 * unit(rng), scale = 0.5 + std::abs(unit(rng));
    augment_ops::AffineMatrix m = {
        std::cos(angle) / scale, -std::sin(angle) / scale + 0.3 * unit(rng),
        w * unit(rng),           std::sin(angle) / scale,
        std::cos(angle) / scale, h * unit(rng)};
    // Whole-pixel shifts (rows copied as runs), half-pixel shifts (ties to
    // even), and shifts far outside the image.
    if (trial % 5 == 1) m = {1, 0, std::round(10 * unit(rng)), 0, 1, std::round(10 * unit(rng))};
    if (trial % 5 == 2) m = {1, 0, 0.5 + std::round(5 * unit(rng)), 0, 1, 0.5};
    if (trial % 5 == 3) m = {1, 0, 1e9 * unit(rng), 0, 1, 1e7 * unit(rng)};
    const std::vector<float> fill = trial % 2 ? std::vector<float>{} : std::vector<float>{200};
    std::vector<uint8_t> pixels(size_t(h) * w * c);
    for (uint8_t& v : pixels) v = static_cast<uint8_t>(rng());
    const Image in = testing::U8Image(h, w, c, pixels);
    const int out_h = h + trial % 3, out_w = w + trial % 4;  // expand=True's larger canvas
    const Image reference = ReferenceNearestWarp(in, m, out_h, out_w, fill);
    // Both builds of the row loops (AVX2 only where the CPU has it).
    for (SimdLevel level : {SimdLevel::kBaseline, SimdLevel::kAvx2}) {
      SetSimdLevelForTesting(level);
      const absl::StatusOr<Image> out =
          augment_ops::WarpAffine(in, m, out_h, out_w, Nearest(fill));
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->u8, reference.u8) << "trial " << trial << ", " << h << "x" << w << "x" << c
                                       << ", " << SimdLevelName(ActiveSimdLevel());
    }
  }
}

TEST(AugmentOpsTest, SharpnessSmoothsAsTorchsFloatKernelRounds) {
  // Factor 0 returns the smoothed image itself; each inner value must be
  // the float32 3x3 sum (1/13 and 5/13 weights) rounded half to even.
  std::mt19937 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    const int h = 3 + rng() % 20, w = 3 + rng() % 20, c = trial % 2 ? 3 : 1;
    std::vector<uint8_t> pixels(size_t(h) * w * c);
    for (uint8_t& v : pixels) v = trial % 5 == 0 ? 255 * (rng() % 2) : static_cast<uint8_t>(rng());
    Image image = testing::U8Image(h, w, c, pixels);
    augment_ops::AdjustSharpness(image, 0.0);
    for (int y = 1; y + 1 < h; ++y) {
      for (int x = 1; x + 1 < w; ++x) {
        for (int ch = 0; ch < c; ++ch) {
          float sum = 0;
          for (int dy = -1; dy <= 1; ++dy) {
            for (int dx = -1; dx <= 1; ++dx) {
              const float weight = dx == 0 && dy == 0 ? 5.0f / 13.0f : 1.0f / 13.0f;
              sum += static_cast<float>(pixels[(size_t(y + dy) * w + x + dx) * c + ch]) * weight;
            }
          }
          ASSERT_EQ(image.u8[(size_t(y) * w + x) * c + ch], std::nearbyint(sum))
              << "trial " << trial << " at " << y << "," << x << "," << ch;
        }
      }
    }
  }
}

TEST(AugmentOpsTest, SolarizeInvertsValuesAtOrAboveAnyThreshold) {
  // img >= threshold on the float value, for thresholds between, on and
  // outside the integers.
  std::vector<uint8_t> all(256);
  for (int v = 0; v < 256; ++v) all[v] = static_cast<uint8_t>(v);
  for (double threshold : {-3.0, 0.0, 0.5, 42.0, 127.5, 128.0, 254.01, 255.0}) {
    Image image = testing::U8Image(16, 16, 1, all);
    augment_ops::Solarize(image, threshold);
    for (int v = 0; v < 256; ++v) {
      EXPECT_EQ(image.u8[v], static_cast<float>(v) >= static_cast<float>(threshold) ? 255 - v : v)
          << "threshold " << threshold << ", value " << v;
    }
  }
}

TEST(AugmentOpsTest, RefusesWhatTorchvisionRefuses) {
  Image f32 = testing::F32Image(2, 2, 1, {0, 0.5f, 1, 0.25f});
  EXPECT_EQ(augment_ops::ApplyOp(f32, {Op::kEqualize, 0}, Nearest()).message(),
            "augment_ops needs a u8 image, as torchvision's uint8 tensors (put it before "
            "to_float), got an f32 2x2x1 image");
  Image rgba = testing::CountingU8Image(2, 2, 4);
  EXPECT_EQ(augment_ops::ApplyOp(rgba, {Op::kIdentity, 0}, Nearest()).message(),
            "augment_ops needs an image of 1 or 3 channels, got 2x2x4");
  Image rgb = testing::CountingU8Image(4, 4, 3);
  EXPECT_EQ(augment_ops::ApplyOp(rgb, {Op::kRotate, 10}, Nearest({1, 2})).message(),
            "augment_ops: fill has 2 values but the image has 3 channels (4x4x3); give 1 value "
            "or 3");
  EXPECT_EQ(augment_ops::ApplyOp(rgb, {Op::kShearX, 0.1}, Bilinear({300})).message(),
            "augment_ops: fill 300 is outside [0, 255] and the 4x4x3 image is u8");
  EXPECT_EQ(augment_ops::ApplyOp(rgb, {Op::kPosterize, 9}, Nearest()).message(),
            "augment_ops: Posterize keeps int(magnitude) bits, in [0, 8], got 9");
  EXPECT_EQ(augment_ops::ApplyOp(rgb, {Op::kSolarize, 256}, Nearest()).message(),
            "augment_ops: Solarize threshold must be <= 255, got 256");
  EXPECT_EQ(augment_ops::ApplyOp(rgb, {Op::kContrast, -1.5}, Nearest()).message(),
            "augment_ops: Contrast magnitude must be >= -1 (factor 1 + magnitude >= 0), got "
            "-1.5");
}

}  // namespace
}  // namespace pipeline
