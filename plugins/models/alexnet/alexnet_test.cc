// The state_dict against torchvision's, classes and channels from the
// context, the smallest input (63x63) and the dropout option's range are
// the model conformance suite's (conformance_test in BUILD).

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

absl::StatusOr<std::unique_ptr<Model>> MakeAlexNet(const std::string& options,
                                                   const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"alexnet\" options { [type.googleapis.com/pipeline.AlexNetOptions] { ",
                   options, " } }"),
      context);
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

}  // namespace
}  // namespace pipeline
