// The state_dict of every variant against torchvision's, classes and
// channels from the context, the smallest input (32x32) and the dropout
// option's range are the model conformance suite's (conformance_test in
// BUILD).

#include <cmath>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

absl::StatusOr<std::unique_ptr<Model>> MakeVgg(const std::string& options,
                                               const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"vgg\" options { [type.googleapis.com/pipeline.VggOptions] { ", options,
                   " } }"),
      context);
}

TEST(VggTest, InitialisesAsTorchvision) {
  auto model = MakeVgg("depth: 11", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  auto parameters = (*model)->named_parameters();
  // 64 -> 128 channels, 3x3: fan_out gives std sqrt(2 / (128 * 9)) = 0.0417,
  // fan_in would give 0.0589.
  EXPECT_NEAR(parameters["features.3.weight"].std().item<double>(), std::sqrt(2.0 / (128 * 9)),
              0.001);
  EXPECT_TRUE(parameters["features.3.bias"].eq(0).all().item<bool>());
  EXPECT_NEAR(parameters["classifier.3.weight"].std().item<double>(), 0.01, 0.0005);
  EXPECT_TRUE(parameters["classifier.3.bias"].eq(0).all().item<bool>());
}

TEST(VggTest, RejectsADepthWithoutAnArchitecture) {
  auto model = MakeVgg("depth: 12", ModelContext{10, 3});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model.status().message(),
            "options: depth: 12 is not a VGG depth; choose 11, 13, 16 or 19");
}

}  // namespace
}  // namespace pipeline
