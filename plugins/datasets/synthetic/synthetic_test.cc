#include "gtest/gtest.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

constexpr char kSmall[] = R"pb(
  name: "synthetic"
  options {
    [type.googleapis.com/pipeline.SyntheticOptions] {
      num_samples: 20 height: 4 width: 6 channels: 3 num_classes: 2 class_signal: 0.9
    }
  })pb";

double Mean(const Image& image) {
  double sum = 0;
  for (uint8_t p : image.u8) sum += p;
  return sum / image.u8.size();
}

TEST(SyntheticTest, ShapeLabelsAndDeterminism) {
  auto dataset = testing::CreatePlugin<Dataset>(kSmall, {.split = "train", .seed = 3});
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ((*dataset)->size(), 20);
  EXPECT_EQ((*dataset)->class_names(), (std::vector<std::string>{"0", "1"}));
  auto a = (*dataset)->Get(5);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->image.ShapeString(), "4x6x3");
  EXPECT_EQ(a->label, 1);
  EXPECT_EQ(a->image.u8, (*dataset)->Get(5)->image.u8);
  EXPECT_NE(a->image.u8, (*dataset)->Get(7)->image.u8);
  auto other_seed = testing::CreatePlugin<Dataset>(kSmall, {.split = "train", .seed = 4});
  EXPECT_NE(a->image.u8, (*other_seed)->Get(5)->image.u8);
}

TEST(SyntheticTest, ClassShowsInBrightness) {
  auto dataset = testing::CreatePlugin<Dataset>(kSmall);
  ASSERT_TRUE(dataset.ok());
  EXPECT_LT(Mean((*dataset)->Get(0)->image), 40);   // class 0: dark
  EXPECT_GT(Mean((*dataset)->Get(1)->image), 215);  // class 1: bright
}

TEST(SyntheticTest, RejectsBadOptions) {
  auto dataset = testing::CreatePlugin<Dataset>(
      R"pb(name: "synthetic"
           options { [type.googleapis.com/pipeline.SyntheticOptions] { num_classes: 0 } })pb");
  EXPECT_EQ(dataset.status().message(), "options: num_classes: 0; must be at least 1");
}

TEST(SyntheticTest, ReadsNoFilesForInference) {
  EXPECT_FALSE(Registry<Dataset>::Global().TraitsOf("synthetic").reads_inference_input);
  DatasetContext context;
  context.inference = InferenceInput{{"photo.jpg"}, {"a", "b"}};
  auto dataset = testing::CreatePlugin<Dataset>(kSmall, context);
  EXPECT_EQ(dataset.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(dataset.status().message().find("dataset \"synthetic\": "), std::string::npos)
      << dataset.status();
}

}  // namespace
}  // namespace pipeline
