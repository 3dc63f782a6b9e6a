// Classes and channels from the context and the forward pass are the model
// conformance suite's (conformance_test in BUILD).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/model_test_util.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/testing/state_dict_fixture.h"
#include "torch/optim/sgd.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

using testing::StateDictEntry;

absl::StatusOr<std::unique_ptr<Model>> MakeSmallCnn(const std::string& options,
                                                    const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat(
          "name: \"small_cnn\" options { [type.googleapis.com/pipeline.SmallCnnOptions] { ",
          options, " } }"),
      context);
}

using testing::ParameterShape;

TEST(SmallCnnTest, StateDictHasTheDocumentedKeys) {
  auto model = MakeSmallCnn("", ModelContext{/*num_classes=*/10, /*input_channels=*/1});
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<StateDictEntry> expected = {
      {"stages.0.conv.weight", "32x1x3x3"},
      {"stages.0.bn.weight", "32"},
      {"stages.0.bn.bias", "32"},
      {"stages.0.bn.running_mean", "32"},
      {"stages.0.bn.running_var", "32"},
      {"stages.0.bn.num_batches_tracked", "scalar"},
      {"stages.1.conv.weight", "64x32x3x3"},
      {"stages.1.bn.weight", "64"},
      {"stages.1.bn.bias", "64"},
      {"stages.1.bn.running_mean", "64"},
      {"stages.1.bn.running_var", "64"},
      {"stages.1.bn.num_batches_tracked", "scalar"},
      {"fc.weight", "10x64"},
      {"fc.bias", "10"},
  };
  EXPECT_TRUE(testing::StateDictEntriesMatch(testing::StateDictEntries(**model), expected));
}

TEST(SmallCnnTest, WidthDoublesPerStage) {
  auto model = MakeSmallCnn("width: 8 stages: 4", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(ParameterShape(**model, "stages.3.conv.weight"), (std::vector<int64_t>{64, 32, 3, 3}));
  EXPECT_EQ(ParameterShape(**model, "fc.weight"), (std::vector<int64_t>{10, 64}));
}

TEST(SmallCnnTest, AnyInputSizeSuitsTheMostStages) {
  // 6 stages take 28x28 down to 1x1 and keep it there (the pools round up).
  auto model = MakeSmallCnn("width: 4 stages: 6", ModelContext{3, 1});
  ASSERT_TRUE(model.ok()) << model.status();
  for (const int64_t size : {1, 5, 28}) {
    SCOPED_TRACE(size);
    const torch::Tensor logits = (*model)->forward(torch::randn({2, 1, size, size}));
    EXPECT_EQ(logits.sizes().vec(), (std::vector<int64_t>{2, 3}));
  }
}

TEST(SmallCnnTest, AFewSgdStepsOn28x28LowerTheLoss) {
  torch::manual_seed(0);
  auto model = MakeSmallCnn("", ModelContext{/*num_classes=*/10, /*input_channels=*/1});
  ASSERT_TRUE(model.ok()) << model.status();
  (*model)->train();
  const torch::Tensor images = torch::randn({32, 1, 28, 28});
  const torch::Tensor labels = torch::randint(10, {32}, torch::kLong);
  torch::optim::SGD optimizer((*model)->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  auto loss_of = [&] {
    return torch::nll_loss(torch::log_softmax((*model)->forward(images), 1), labels);
  };
  const double initial_loss = loss_of().item<double>();

  constexpr int kSteps = 5;
  for (int step = 0; step < kSteps; ++step) {
    optimizer.zero_grad();
    torch::Tensor loss = loss_of();
    loss.backward();
    optimizer.step();
  }
  // How fast is the bench's business (bazel run //tools:bench), not a test's.
  EXPECT_LT(loss_of().item<double>(), initial_loss);
}

TEST(SmallCnnTest, RejectsInvalidOptions) {
  EXPECT_EQ(MakeSmallCnn("width: 0", ModelContext{10, 1}).status().message(),
            "options: width: 0 is not a channel count from 1 to 1024");
  EXPECT_EQ(MakeSmallCnn("stages: 7", ModelContext{10, 1}).status().message(),
            "options: stages: 7 is not a stage count from 1 to 6");
}

}  // namespace
}  // namespace pipeline
