#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/image/test_images.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/transform_test_util.h"

namespace pipeline {
namespace {

using ::pipeline::testing::ApplyOrFail;
using ::pipeline::testing::F32Image;
using ::pipeline::testing::U8Image;
using ::testing::ElementsAre;

std::string Config(const std::string& options) {
  return testing::PluginText("random_horizontal_flip", "RandomHorizontalFlipOptions", options);
}

std::unique_ptr<Transform> Make(const std::string& options) {
  return testing::MakePluginOrFail<Transform>(Config(options));
}

TEST(RandomHorizontalFlipTest, ProbabilityOneAlwaysMirrors) {
  auto flip = Make("probability: 1");
  for (uint64_t seed = 0; seed < 20; ++seed) {
    EXPECT_THAT(ApplyOrFail(*flip, U8Image(2, 4, 1, {1, 2, 3, 4, 5, 6, 7, 8}), seed).u8,
                ElementsAre(4, 3, 2, 1, 8, 7, 6, 5));
  }
  // Whole pixels move; their channels keep their order.
  EXPECT_THAT(ApplyOrFail(*flip, F32Image(1, 3, 2, {1, 2, 3, 4, 5, 6})).f32,
              ElementsAre(5, 6, 3, 4, 1, 2));
  EXPECT_THAT(ApplyOrFail(*flip, U8Image(1, 3, 3, {1, 2, 3, 4, 5, 6, 7, 8, 9})).u8,
              ElementsAre(7, 8, 9, 4, 5, 6, 1, 2, 3));
}

TEST(RandomHorizontalFlipTest, ProbabilityZeroNeverMirrors) {
  auto flip = Make("probability: 0");
  for (uint64_t seed = 0; seed < 20; ++seed) {
    EXPECT_THAT(ApplyOrFail(*flip, U8Image(2, 4, 1, {1, 2, 3, 4, 5, 6, 7, 8}), seed).u8,
                ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  }
}

TEST(RandomHorizontalFlipTest, DefaultFlipsAboutHalfDeterministicallyPerSeed) {
  auto flip = testing::CreatePlugin<Transform>(R"pb(name: "random_horizontal_flip")pb");
  ASSERT_TRUE(flip.ok()) << flip.status();
  const Image image = U8Image(1, 2, 1, {1, 2});
  int flipped = 0;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    const Image out = ApplyOrFail(**flip, image, seed);
    EXPECT_EQ(out.u8, ApplyOrFail(**flip, image, seed).u8);
    if (out.u8[0] == 2) ++flipped;
  }
  EXPECT_GT(flipped, 400);
  EXPECT_LT(flipped, 600);
}

TEST(RandomHorizontalFlipTest, ValidatorChecksTheRange) {
  for (const char* bad : {"1.5", "-0.1", "nan"}) {
    const absl::Status status = Registry<Transform>::Global().Validate(
        testing::ParsePluginConfig(Config(std::string("probability: ") + bad)));
    EXPECT_EQ(status.message(),
              std::string("options: random_horizontal_flip: probability must be in [0, 1], got ") +
                  bad);
  }
}

}  // namespace
}  // namespace pipeline
