#include "pipeline/weights/build_model.h"

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/empty.pb.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "pipeline/registry/registry.h"
#include "pipeline/testing/temp_path.h"
#include "pipeline/weights/pretrained.h"
#include "pipeline/weights/safetensors.h"
#include "pipeline/weights/state_dict_reader.h"
#include "pipeline/testing/tiny_models.h"
#include "torch/nn/modules/batchnorm.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using TinyNet = testing::TinyConvNet;

class Headless : public Model {
 public:
  Headless() { register_parameter("w", torch::ones({2})); }
  torch::Tensor forward(const torch::Tensor& images) override { return images; }
};

PIPELINE_REGISTER_PLUGIN(
    Model, "build_model_test_net", google::protobuf::Empty, "TinyNet of width 4",
    [](const google::protobuf::Empty&,
       const ModelContext& context) -> absl::StatusOr<std::unique_ptr<Model>> {
      return std::make_unique<TinyNet>(context.num_classes, context.input_channels, 4);
    });
PIPELINE_REGISTER_PLUGIN(
    Model, "build_model_test_wide_net", google::protobuf::Empty, "TinyNet of width 8",
    [](const google::protobuf::Empty&,
       const ModelContext& context) -> absl::StatusOr<std::unique_ptr<Model>> {
      return std::make_unique<TinyNet>(context.num_classes, context.input_channels, 8);
    });
PIPELINE_REGISTER_PLUGIN(
    Model, "build_model_test_headless", google::protobuf::Empty, "no classifier head",
    [](const google::protobuf::Empty&,
       const ModelContext&) -> absl::StatusOr<std::unique_ptr<Model>> {
      return std::make_unique<Headless>();
    });

ModelConfig Config(const std::string& text) {
  ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

ModelInputs Data(int64_t classes, int64_t channels) {
  ModelInputs inputs;
  inputs.data_classes = classes;
  inputs.data_channels = channels;
  return inputs;
}

std::vector<int64_t> Shape(Model& model, const std::string& name) {
  return model.named_parameters()[name].sizes().vec();
}

// A weights file for TinyNet(3 classes, 1 channel, width 4) whose values
// differ from any fresh model's.
std::string WriteWeights(const std::string& name, int64_t num_classes = 3) {
  TinyNet source(num_classes, 1, 4);
  NamedTensors tensors = StateDictOf(source);
  for (auto& [key, tensor] : tensors) {
    tensor = tensor.detach().clone();
    if (tensor.is_floating_point()) tensor.uniform_(0.5, 1.5);
  }
  const std::string path = testing::TempPath(name);
  EXPECT_TRUE(WriteStateDict(path, tensors).ok());
  return path;
}

TEST(BuildModelTest, TakesClassesAndChannelsFromTheData) {
  auto model = BuildModel(Config("name: \"build_model_test_net\""), Data(2, 3));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(Shape(**model, "fc.weight"), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(Shape(**model, "conv.weight"), (std::vector<int64_t>{4, 3, 3, 3}));
}

TEST(BuildModelTest, TheConfigsCountsWinOverTheData) {
  auto model = BuildModel(
      Config("name: \"build_model_test_net\" num_classes: 5 in_channels: 1"), Data(2, 3));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(Shape(**model, "fc.weight"), (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(Shape(**model, "conv.weight"), (std::vector<int64_t>{4, 1, 3, 3}));
}

TEST(BuildModelTest, NeedsClassesAndChannelsFromTheConfigOrTheData) {
  auto no_classes = BuildModel(Config("name: \"build_model_test_net\""), Data(0, 3));
  EXPECT_EQ(no_classes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(no_classes.status().message(),
            "model.num_classes: 0 takes the training data's class count, but it gives none; "
            "set model.num_classes");
  auto no_channels =
      BuildModel(Config("name: \"build_model_test_net\" num_classes: 10"), ModelInputs{});
  EXPECT_EQ(no_channels.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(no_channels.status().message(),
            "model.in_channels: 0 takes the training samples' channel count, but they give "
            "none; set model.in_channels");
}

TEST(BuildModelTest, PassesThePluginsErrorsOn) {
  auto model = BuildModel(Config("name: \"no_such_net\""), Data(2, 3));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(model.status().message()),
              StartsWith("name: \"no_such_net\" is not a registered model"));
}

TEST(ValidateModelConfigTest, AcceptsTheDefaultsAndFreezingWithWeights) {
  EXPECT_TRUE(ValidateModelConfig(Config("name: \"build_model_test_net\"")).ok());
  EXPECT_TRUE(ValidateModelConfig(Config("num_classes: 3 in_channels: 1 weights: \"w.pt\" "
                                         "freeze_backbone: true"))
                  .ok());
}

TEST(ValidateModelConfigTest, ReportsEveryProblemNamingItsField) {
  const ModelConfig config =
      Config("name: \"build_model_test_net\" num_classes: -1 in_channels: -3 "
             "freeze_backbone: true");
  const absl::Status status = ValidateModelConfig(config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "model.num_classes: -1 is negative; set a count, or 0 for the training data's "
            "classes\n"
            "model.in_channels: -3 is negative; set a count, or 0 for the training samples' "
            "channels\n"
            "model.freeze_backbone: true needs model.weights: a backbone frozen at its random "
            "initialisation would never learn; set model.weights to a state dict file or drop "
            "freeze_backbone");
  // BuildModel refuses it the same way, before building anything.
  EXPECT_EQ(BuildModel(config, Data(2, 3)).status(), status);
}

TEST(BuildModelTest, LoadsTheWeightsAndFreezesTheBackbone) {
  const std::string path = WriteWeights("tiny.pt");
  std::ostringstream log;
  ModelInputs inputs = Data(3, 1);
  inputs.log = &log;
  auto model = BuildModel(
      Config(absl::StrCat("name: \"build_model_test_net\" weights: \"", path,
                          "\" freeze_backbone: true")),
      inputs);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(log.str(), absl::StrCat("weights: loaded 9 of 9 tensors from ", path,
                                    "\nfreeze_backbone: froze 4 parameter tensors (48 values); "
                                    "training only fc.weight, fc.bias\n"));
  auto file = ReadStateDict(path);
  ASSERT_TRUE(file.ok()) << file.status();
  const NamedTensors loaded = StateDictOf(**model);
  ASSERT_EQ(loaded.size(), file->size());
  for (size_t i = 0; i < loaded.size(); ++i) {
    EXPECT_EQ(loaded[i].first, (*file)[i].first);
    EXPECT_TRUE(loaded[i].second.equal((*file)[i].second)) << loaded[i].first;
  }
  EXPECT_EQ(TrainableParameters(**model).size(), 2u);
}

TEST(BuildModelTest, LoadsSafetensorsWeightsInFloat32AndBfloat16) {
  const std::string pt = WriteWeights("tiny_for_safetensors.pt");
  auto file = ReadStateDict(pt);
  ASSERT_TRUE(file.ok()) << file.status();
  for (const bool bfloat16 : {false, true}) {
    SCOPED_TRACE(bfloat16 ? "BF16" : "F32");
    NamedTensors tensors = *file;
    for (auto& [name, tensor] : tensors) {
      if (bfloat16 && tensor.is_floating_point()) tensor = tensor.to(torch::kBFloat16);
    }
    const std::string path =
        testing::TempPath(bfloat16 ? "tiny_bf16.safetensors" : "tiny.safetensors");
    ASSERT_TRUE(WriteSafetensors(path, tensors).ok());
    std::ostringstream log;
    ModelInputs inputs = Data(3, 1);
    inputs.log = &log;
    auto model = BuildModel(
        Config(absl::StrCat("name: \"build_model_test_net\" weights: \"", path, "\"")), inputs);
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_THAT(log.str(), StartsWith(absl::StrCat("weights: loaded 9 of 9 tensors from ", path)));
    EXPECT_EQ(log.str().find("converted 8 tensors from BFloat16 to Float") != std::string::npos,
              bfloat16);
    for (const auto& [name, tensor] : StateDictOf(**model)) {
      for (const auto& [file_name, expected] : tensors) {
        if (file_name == name) {
          EXPECT_TRUE(tensor.equal(expected.to(tensor.scalar_type()))) << name;
        }
      }
    }
  }
  // A damaged file is an error of the field, naming the file and what is wrong.
  const std::string broken = testing::TempPath("broken.safetensors");
  std::ofstream(broken, std::ios::binary) << std::string("\x08\0\0\0\0\0\0\0{\"a\": 1}", 16);
  auto model = BuildModel(
      Config(absl::StrCat("name: \"build_model_test_net\" weights: \"", broken, "\"")),
      Data(3, 1));
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(std::string(model.status().message()),
              StartsWith(absl::StrCat("model.weights: ", broken, ": header: tensor \"a\": is a "
                                      "number, not an object")));
}

TEST(BuildModelTest, AnotherNumberOfClassesKeepsTheFreshHead) {
  const std::string path = WriteWeights("tiny_3_classes.pt");
  std::ostringstream log;
  ModelInputs inputs = Data(5, 1);
  inputs.log = &log;
  auto model = BuildModel(
      Config(absl::StrCat("name: \"build_model_test_net\" weights: \"", path, "\"")), inputs);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_THAT(log.str(), HasSubstr("weights: kept the fresh initialisation of fc.weight (file "
                                   "3x4, model 5x4), fc.bias (file 3, model 5)"));
  EXPECT_EQ(TrainableParameters(**model).size(), 6u);
}

TEST(BuildModelTest, SkipsTheFileWhenTheCallerLoadsItsOwn) {
  ModelInputs inputs = Data(3, 1);
  inputs.load_weights = false;
  auto model = BuildModel(
      Config("name: \"build_model_test_net\" weights: \"gone.pt\" freeze_backbone: true"),
      inputs);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(TrainableParameters(**model).size(), 6u);
}

TEST(BuildModelTest, AMissingFileNamesTheFieldAndTheFile) {
  auto model =
      BuildModel(Config("name: \"build_model_test_net\" weights: \"gone.pt\""), Data(3, 1));
  EXPECT_EQ(model.status().message(), "model.weights: gone.pt: cannot open the file");
}

TEST(BuildModelTest, WeightsThatDoNotFitNameTheFieldAndEveryTensor) {
  const std::string path = WriteWeights("tiny_narrow.pt");
  auto model = BuildModel(
      Config(absl::StrCat("name: \"build_model_test_wide_net\" weights: \"", path, "\"")),
      Data(3, 1));
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(std::string(model.status().message()),
              StartsWith(absl::StrCat("model.weights: ", path, " does not fit this model")));
  EXPECT_THAT(model.status().message(), HasSubstr("conv.weight (file 4x1x3x3, model 8x1x3x3)"));
}

TEST(BuildModelTest, FreezingAModelWithoutAHeadNamesTheField) {
  const std::string path = testing::TempPath("headless.pt");
  Headless source;
  ASSERT_TRUE(WriteStateDict(path, StateDictOf(source)).ok());
  auto model = BuildModel(Config(absl::StrCat("name: \"build_model_test_headless\" weights: \"",
                                              path, "\" freeze_backbone: true")),
                          Data(3, 1));
  EXPECT_EQ(model.status().message(),
            "model.freeze_backbone: this model names no classifier head");
}

}  // namespace
}  // namespace pipeline
