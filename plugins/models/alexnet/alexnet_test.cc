#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/model_test_util.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/state_dict_fixture.h"

namespace pipeline {
namespace {

absl::StatusOr<std::unique_ptr<Model>> MakeAlexNet(const std::string& options,
                                                   const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"alexnet\" options { [type.googleapis.com/pipeline.AlexNetOptions] { ",
                   options, " } }"),
      context);
}

using testing::ParameterShape;

TEST(AlexNetTest, StateDictMatchesTorchvision) {
  auto model = MakeAlexNet("", ModelContext{1000, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(testing::StateDictMatchesFixture(
      **model, "plugins/models/alexnet/testdata/torchvision_alexnet_state_dict.txt"));
}

TEST(AlexNetTest, TakesClassesAndChannelsFromTheContext) {
  auto model = MakeAlexNet("", ModelContext{/*num_classes=*/2, /*input_channels=*/3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(ParameterShape(**model, "classifier.6.weight"), (std::vector<int64_t>{2, 4096}));
  EXPECT_EQ(ParameterShape(**model, "features.0.weight"), (std::vector<int64_t>{64, 3, 11, 11}));
}

TEST(AlexNetTest, ForwardGivesOneLogitPerClassAtTheSmallestInput) {
  auto model = MakeAlexNet("", ModelContext{/*num_classes=*/10, /*input_channels=*/3});
  ASSERT_TRUE(model.ok()) << model.status();
  // 63x63 is the smallest size the three max pools accept.
  const torch::Tensor logits = (*model)->forward(torch::randn({2, 3, 63, 63}));
  EXPECT_EQ(logits.sizes().vec(), (std::vector<int64_t>{2, 10}));
  EXPECT_TRUE(logits.isfinite().all().item<bool>());
}

TEST(AlexNetTest, DropoutIsActiveOnlyInTraining) {
  auto model = MakeAlexNet("dropout: 0.5", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  const torch::Tensor images = torch::randn({2, 3, 64, 64});
  (*model)->eval();
  EXPECT_TRUE((*model)->forward(images).equal((*model)->forward(images)));
  (*model)->train();
  EXPECT_FALSE((*model)->forward(images).equal((*model)->forward(images)));
}

TEST(AlexNetTest, RejectsADropoutThatIsNotAProbability) {
  auto model = MakeAlexNet("dropout: 1.5", ModelContext{10, 3});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "options: dropout: 1.5 is not a probability from 0 to 1 (torch.nn.Dropout's range); "
            "set 0 to disable dropout");
  EXPECT_EQ(MakeAlexNet("dropout: -0.25", ModelContext{10, 3}).status().message(),
            "options: dropout: -0.25 is not a probability from 0 to 1 (torch.nn.Dropout's range); "
            "set 0 to disable dropout");
}

}  // namespace
}  // namespace pipeline
