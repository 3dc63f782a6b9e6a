#include "plugins/transforms/gaussian_blur/gaussian_blur.h"

#include <cmath>
#include <numeric>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/image/test_images.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/torchvision_fixture.h"

namespace pipeline {
namespace {

constexpr char kTestdata[] = "plugins/transforms/gaussian_blur/testdata/torchvision_";

std::string Config(const std::string& options) {
  return testing::PluginText("gaussian_blur", "GaussianBlurOptions", options);
}

std::string ValidationError(const std::string& options) {
  return testing::ValidationMessage<Transform>(Config(options));
}

TEST(GaussianBlurTest, MatchesTorchvisionForTheSameSigma) {
  struct Case {
    const char* fixture;
    int kernel_x;
    int kernel_y;
    double sigma;
  };
  for (const Case& c : {
           Case{"gaussian_blur_3x3_u8", 3, 3, 0.7},
           Case{"gaussian_blur_5x3_u8", 5, 3, 1.3},
           Case{"gaussian_blur_5x5_gray_u8", 5, 5, 2.0},
           Case{"gaussian_blur_3x5_f32", 3, 5, 0.45},
       }) {
    SCOPED_TRACE(c.fixture);
    const testing::TorchvisionFixture fixture =
        testing::ReadTorchvisionFixture(std::string(kTestdata) + c.fixture + ".txt");
    Image image = fixture.input;
    ASSERT_TRUE(gaussian_blur::Blur(image, c.kernel_x, c.kernel_y, c.sigma).ok());
    // torchvision convolves in float32 with another summation order: u8
    // values may round the other way (within 1 = 1/255), f32 ones differ by
    // float rounding.
    EXPECT_TRUE(testing::ImagesNear(image, fixture.output, image.is_float() ? 1e-6 : 1))
        << fixture.call;
  }
}

TEST(GaussianBlurTest, TheKernelIsANormalizedGaussian) {
  const std::vector<float> kernel = gaussian_blur::Kernel1d(5, 1.0);
  ASSERT_EQ(kernel.size(), 5u);
  EXPECT_NEAR(std::accumulate(kernel.begin(), kernel.end(), 0.0), 1.0, 1e-6);
  EXPECT_FLOAT_EQ(kernel[0], kernel[4]);
  EXPECT_FLOAT_EQ(kernel[1], kernel[3]);
  EXPECT_NEAR(kernel[1] / kernel[2], std::exp(-0.5), 1e-6);
  // A constant image stays constant.
  Image flat = testing::U8Image(3, 4, 1, std::vector<uint8_t>(12, 77));
  ASSERT_TRUE(gaussian_blur::Blur(flat, 3, 5, 3.0).ok());
  EXPECT_EQ(flat.u8, std::vector<uint8_t>(12, 77));
}

TEST(GaussianBlurTest, SigmaIsDrawnUniformlyAsFloat32) {
  double sum = 0;
  int low = 0;
  constexpr int kDraws = 10000;
  for (int seed = 0; seed < kDraws; ++seed) {
    SampleRandom random(seed, 0, 0), again(seed, 0, 0);
    const double sigma = gaussian_blur::DrawSigma(0.1, 2.0, random);
    ASSERT_EQ(sigma, gaussian_blur::DrawSigma(0.1, 2.0, again));
    ASSERT_GE(sigma, 0.1f);
    ASSERT_LE(sigma, 2.0f);
    ASSERT_EQ(sigma, static_cast<float>(sigma));
    sum += sigma;
    if (sigma < 0.575) ++low;
  }
  EXPECT_NEAR(sum / kDraws, 1.05, 0.02);
  // A quarter of the range: 2500 expected, 5 standard deviations about 220.
  EXPECT_GT(low, 2280);
  EXPECT_LT(low, 2720);
}

TEST(GaussianBlurTest, ThePluginBlursDeterministicallyPerSeed) {
  auto blur = testing::CreatePlugin<Transform>(Config("kernel_size: 3"));
  ASSERT_TRUE(blur.ok()) << blur.status();
  const Image input = testing::CountingU8Image(6, 7, 3);
  for (uint64_t seed = 0; seed < 10; ++seed) {
    Image first = input, second = input;
    SampleRandom r1(seed, 0, 0), r2(seed, 0, 0);
    ASSERT_TRUE((*blur)->Apply(first, r1).ok());
    ASSERT_TRUE((*blur)->Apply(second, r2).ok());
    EXPECT_EQ(first.u8, second.u8);
    EXPECT_EQ(first.ShapeString(), "6x7x3");
  }
  Image tiny = testing::CountingU8Image(2, 7, 1);
  auto wide = testing::CreatePlugin<Transform>(Config("kernel_size: [3, 5]"));
  ASSERT_TRUE(wide.ok()) << wide.status();
  SampleRandom random(1, 0, 0);
  EXPECT_EQ((*wide)->Apply(tiny, random).message(),
            "gaussian_blur: the 3 (x) by 5 (y) kernel needs an image more than half a kernel "
            "wide and high (reflect padding), got 2x7x1");
}

TEST(GaussianBlurTest, ValidatorChecksTheOptions) {
  EXPECT_EQ(ValidationError(""),
            "options: gaussian_blur: kernel_size takes 1 value or 2 (x, y), got 0");
  EXPECT_EQ(ValidationError("kernel_size: 4"),
            "options: gaussian_blur: kernel_size must be odd and > 0, got 4");
  EXPECT_EQ(ValidationError("kernel_size: 3 sigma: 0"),
            "options: gaussian_blur: a single sigma must be > 0, got 0");
  EXPECT_EQ(ValidationError("kernel_size: 3 sigma: [2, 1]"),
            "options: gaussian_blur: sigma [min, max] must have 0 < min <= max, got [2, 1]");
  EXPECT_EQ(ValidationError("kernel_size: 3 sigma: [1, 2, 3]"),
            "options: gaussian_blur: sigma takes 1 value or 2 ([min, max]), got 3");
}

}  // namespace
}  // namespace pipeline
