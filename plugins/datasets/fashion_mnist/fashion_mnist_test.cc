#include <cstdio>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

TEST(FashionMnistTest, ReadsTheRealTestSplit) {
  auto dataset = testing::CreatePlugin<Dataset>(R"pb(name: "fashion_mnist")pb",
                                                {.split = "validation"});
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ((*dataset)->size(), 10000);
  EXPECT_EQ((*dataset)->class_names().size(), 10u);
  EXPECT_EQ((*dataset)->class_names()[9], "Ankle_boot");
  auto sample = (*dataset)->Get(0);
  ASSERT_TRUE(sample.ok());
  EXPECT_EQ(sample->image.ShapeString(), "28x28x1");
  // The first test image of Fashion-MNIST is an ankle boot.
  EXPECT_EQ(sample->label, 9);
  int nonzero = 0;
  for (uint8_t p : sample->image.u8) nonzero += p != 0;
  EXPECT_GT(nonzero, 100);
}

TEST(FashionMnistTest, TrainSplitAndLimit) {
  auto dataset = testing::CreatePlugin<Dataset>(
      R"pb(name: "fashion_mnist"
           options { [type.googleapis.com/pipeline.FashionMnistOptions] { limit: 500 } })pb",
      {.split = "train"});
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ((*dataset)->size(), 500);
  // The first training image of Fashion-MNIST is an ankle boot, the second a T-shirt.
  EXPECT_EQ((*dataset)->Get(0)->label, 9);
  EXPECT_EQ((*dataset)->Get(1)->label, 0);
  EXPECT_FALSE((*dataset)->Get(500).ok());
}

TEST(FashionMnistTest, MissingFolderSaysHowToFixIt) {
  auto dataset = testing::CreatePlugin<Dataset>(
      R"pb(name: "fashion_mnist"
           options { [type.googleapis.com/pipeline.FashionMnistOptions] { root: "/no/such" } })pb",
      {.split = "train"});
  EXPECT_THAT(dataset.status().message(),
              HasSubstr("dataset \"fashion_mnist\": root: folder /no/such does not exist; install "
                        "the dataset-fashion-mnist package"));
}

TEST(FashionMnistTest, UnreadableIdxFileIsNamed) {
  const std::string root = ::testing::TempDir() + "/broken_mnist";
  std::filesystem::create_directories(root);
  std::ofstream(root + "/t10k-images-idx3-ubyte") << "this is not idx data";
  std::ofstream(root + "/t10k-labels-idx1-ubyte") << "neither is this";
  auto dataset = testing::CreatePlugin<Dataset>(
      "name: \"fashion_mnist\" options { [type.googleapis.com/pipeline.FashionMnistOptions] { "
      "root: \"" + root + "\" split: TEST } }");
  EXPECT_THAT(dataset.status().message(),
              HasSubstr(root + "/t10k-images-idx3-ubyte: not an idx images file: magic number"));
}

TEST(FashionMnistTest, NegativeLimitIsRejected) {
  auto dataset = testing::CreatePlugin<Dataset>(
      R"pb(name: "fashion_mnist"
           options { [type.googleapis.com/pipeline.FashionMnistOptions] { limit: -1 } })pb");
  EXPECT_EQ(dataset.status().message(), "options: limit: -1 is negative; use 0 for all samples");
}

TEST(FashionMnistTest, ReadsNoImageFilesForInference) {
  EXPECT_FALSE(Registry<Dataset>::Global().TraitsOf("fashion_mnist").reads_inference_input);
  DatasetContext context;
  context.inference = InferenceInput{{"photo.jpg"}, {"a", "b"}};
  auto dataset = testing::CreatePlugin<Dataset>(R"pb(name: "fashion_mnist")pb", context);
  EXPECT_EQ(dataset.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(dataset.status().message(), HasSubstr("dataset \"fashion_mnist\": "));
}

}  // namespace
}  // namespace pipeline
