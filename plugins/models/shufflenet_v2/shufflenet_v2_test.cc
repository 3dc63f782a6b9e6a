#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/model_test_util.h"
#include "pipeline/testing/parity_fixture.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

absl::StatusOr<std::unique_ptr<Model>> MakeShuffleNetV2(const std::string& options,
                                                        const ModelContext& context) {
  return testing::CreatePlugin<Model>(
      absl::StrCat("name: \"shufflenet_v2\" options { "
                   "[type.googleapis.com/pipeline.ShuffleNetV2Options] { ",
                   options, " } }"),
      context);
}

using testing::DeterministicInput;
using testing::FillDeterministically;
using testing::ParameterShape;
using testing::ReadLogits;

TEST(ShuffleNetV2Test, DefaultsToX1_0) {
  auto model = MakeShuffleNetV2("", ModelContext{10, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(ParameterShape(**model, "stage2.0.branch1.2.weight"),
            (std::vector<int64_t>{58, 24, 1, 1}));
  EXPECT_EQ(ParameterShape(**model, "fc.weight"), (std::vector<int64_t>{10, 1024}));
}

}  // namespace
}  // namespace pipeline
