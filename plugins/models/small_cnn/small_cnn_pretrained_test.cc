// model.weights and model.freeze_backbone end to end, through BuildModel as
// the trainer builds a model, against weights PyTorch saved
// (tools/fixtures/small_cnn_weights.py).

#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/weights/build_model.h"
#include "pipeline/weights/pretrained.h"
#include "pipeline/weights/state_dict_reader.h"
#include "torch/csrc/autograd/grad_mode.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

std::string Fixture(const std::string& name) {
  return "pipeline/weights/testdata/small_cnn_" + name + ".pt";
}

// The model of `model_fields` (ModelConfig's fields beside name and
// options), built as the trainer builds it from data with
// `num_classes` classes of 1-channel images.
absl::StatusOr<std::unique_ptr<Model>> BuildSmallCnn(const std::string& model_fields,
                                                     const std::string& options,
                                                     std::ostream* log = nullptr,
                                                     int64_t num_classes = 3) {
  ModelConfig config;
  const std::string text =
      absl::StrCat("name: \"small_cnn\" ", model_fields,
                   " options { [type.googleapis.com/pipeline.SmallCnnOptions] { ", options, " } }");
  if (!google::protobuf::TextFormat::ParseFromString(text, &config)) {
    return absl::InvalidArgumentError("unparsable test config: " + text);
  }
  ModelInputs inputs;
  inputs.data_classes = num_classes;
  inputs.data_channels = 1;
  inputs.log = log;
  return BuildModel(config, inputs);
}

// The fixture's model: in_channels 1, width 4, stages 2, num_classes 3.
absl::StatusOr<std::unique_ptr<Model>> MakeSmallCnn(const std::string& model_fields,
                                                    std::ostream* log = nullptr,
                                                    int64_t num_classes = 3) {
  return BuildSmallCnn(model_fields, "width: 4 stages: 2", log, num_classes);
}

torch::Tensor Named(const NamedTensors& tensors, const std::string& name) {
  for (const auto& [key, tensor] : tensors) {
    if (key == name) return tensor;
  }
  return {};
}

TEST(SmallCnnPretrainedTest, GivesPyTorchsLogitsForEveryWayOfSaving) {
  auto io = ReadStateDict(Fixture("io"));
  ASSERT_TRUE(io.ok()) << io.status();
  for (const char* name : {"state_dict", "plain_dict", "nested", "model_key"}) {
    SCOPED_TRACE(name);
    std::ostringstream log;
    auto model = MakeSmallCnn(absl::StrCat("weights: \"", Fixture(name), "\""), &log);
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(log.str(),
              absl::StrCat("weights: loaded 14 of 14 tensors from ", Fixture(name), "\n"));
    (*model)->eval();
    torch::NoGradGuard no_grad;
    const torch::Tensor logits = (*model)->forward(Named(*io, "input"));
    EXPECT_TRUE(logits.allclose(Named(*io, "logits"), /*rtol=*/0, /*atol=*/1e-5))
        << logits << "\nexpected\n"
        << Named(*io, "logits");
  }
}

TEST(SmallCnnPretrainedTest, AnotherNumberOfClassesReplacesExactlyTheHead) {
  torch::manual_seed(3);
  std::ostringstream log;
  auto model = MakeSmallCnn(absl::StrCat("weights: \"", Fixture("state_dict"), "\""), &log,
                            /*num_classes=*/5);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(log.str(),
            absl::StrCat("weights: loaded 12 of 14 tensors from ", Fixture("state_dict"),
                         "\nweights: kept the fresh initialisation of fc.weight (file 3x8, "
                         "model 5x8), fc.bias (file 3, model 5): the classifier head's shape "
                         "differs from the file's (another number of classes)\n"));
  auto file = ReadStateDict(Fixture("state_dict"));
  ASSERT_TRUE(file.ok());
  for (const auto& item : (*model)->named_parameters()) {
    if (item.key().rfind("fc.", 0) == 0) continue;
    EXPECT_TRUE(item.value().equal(Named(*file, item.key()))) << item.key();
  }
  for (const auto& item : (*model)->named_buffers()) {
    EXPECT_TRUE(item.value().equal(Named(*file, item.key()))) << item.key();
  }
}

TEST(SmallCnnPretrainedTest, FreezeBackboneLeavesOnlyTheHeadTrainable) {
  std::ostringstream log;
  auto model = MakeSmallCnn(
      absl::StrCat("weights: \"", Fixture("state_dict"), "\" freeze_backbone: true"), &log);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_THAT(log.str(), HasSubstr("freeze_backbone: froze 6 parameter tensors (348 values); "
                                   "training only fc.weight, fc.bias\n"));
  const std::vector<torch::Tensor> trainable = TrainableParameters(**model);
  ASSERT_EQ(trainable.size(), 2u);
  EXPECT_TRUE(trainable[0].is_same((*model)->named_parameters()["fc.weight"]));
}

TEST(SmallCnnPretrainedTest, AnotherWidthIsAnErrorNamingTheFile) {
  auto model =
      BuildSmallCnn(absl::StrCat("weights: \"", Fixture("state_dict"), "\""), "width: 8 stages: 2");
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(),
              HasSubstr(absl::StrCat("model.weights: ", Fixture("state_dict"),
                                     " does not fit this model")));
  EXPECT_THAT(model.status().message(),
              HasSubstr("stages.0.conv.weight (file 4x1x3x3, model 8x1x3x3)"));
}

TEST(SmallCnnPretrainedTest, WrongDtypeIsAnErrorNamingTheFile) {
  auto model = MakeSmallCnn(absl::StrCat("weights: \"", Fixture("double"), "\""));
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr(absl::StrCat("model.weights: ", Fixture("double"),
                                                               " does not fit this model")));
  EXPECT_THAT(model.status().message(),
              HasSubstr("dtypes differ: stages.0.conv.weight (file Double, model Float)"));
}

TEST(SmallCnnPretrainedTest, FreezeBackboneWithoutWeightsIsAConfigError) {
  auto model = MakeSmallCnn("freeze_backbone: true");
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(),
              HasSubstr("model.freeze_backbone: true needs model.weights"));
}

}  // namespace
}  // namespace pipeline
