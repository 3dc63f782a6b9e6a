#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/image/test_images.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

using ::pipeline::testing::F32Image;
using ::pipeline::testing::U8Image;
using ::testing::ElementsAre;
using ::testing::FloatEq;

std::string Config(const std::string& options) {
  return testing::PluginText("to_float", "ToFloatOptions", options);
}

std::unique_ptr<Transform> Make(const std::string& options) {
  return testing::MakePluginOrFail<Transform>(Config(options));
}

TEST(ToFloatTest, DefaultMapsU8OntoZeroToOne) {
  auto to_float = Make("");
  Image image = U8Image(1, 2, 2, {0, 51, 255, 128});
  SampleRandom random(1, 0, 0);
  ASSERT_TRUE(to_float->Apply(image, random).ok());
  EXPECT_TRUE(image.is_float());
  EXPECT_TRUE(image.u8.empty());
  EXPECT_EQ(image.ShapeString(), "1x2x2");
  EXPECT_THAT(image.f32, ElementsAre(0.0f, FloatEq(0.2f), 1.0f, FloatEq(128.0f / 255.0f)));
  EXPECT_EQ(image.f32[2], 1.0f);  // exactly: 255 * (1/255) rounds to 1
}

TEST(ToFloatTest, CustomScale) {
  auto to_float = Make("scale: 0.5");
  Image image = U8Image(1, 3, 1, {0, 3, 200});
  SampleRandom random(1, 0, 0);
  ASSERT_TRUE(to_float->Apply(image, random).ok());
  EXPECT_THAT(image.f32, ElementsAre(0.0f, 1.5f, 100.0f));
}

TEST(ToFloatTest, AlreadyFloatIsAnError) {
  Image image = F32Image(1, 1, 3, {0.1f, 0.2f, 0.3f});
  SampleRandom random(1, 0, 0);
  EXPECT_EQ(Make("")->Apply(image, random).message(),
            "to_float: the image is already float (1x1x3); keep one to_float in the "
            "transforms, before those that need floats");
}

TEST(ToFloatTest, ValidatorRejectsNonPositiveScale) {
  for (const char* bad : {"0", "-1", "inf"}) {
    EXPECT_EQ(Registry<Transform>::Global()
                  .Validate(testing::ParsePluginConfig(Config(std::string("scale: ") + bad)))
                  .message(),
              std::string("options: to_float: scale must be > 0 and finite, got ") + bad);
  }
}

}  // namespace
}  // namespace pipeline
