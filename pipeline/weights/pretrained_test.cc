#include "pipeline/weights/pretrained.h"
#include "pipeline/testing/tiny_models.h"

#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "torch/nn/modules/batchnorm.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/linear.h"
#include "torch/optim/adamw.h"
#include "torch/optim/sgd.h"

namespace pipeline {
namespace {

using TinyNet = testing::TinyConvNet;


NamedTensors StateOf(Model& model) {
  NamedTensors tensors;
  for (const auto& item : model.named_parameters()) {
    tensors.emplace_back(item.key(), item.value().detach().clone());
  }
  for (const auto& item : model.named_buffers()) {
    tensors.emplace_back(item.key(), item.value().detach().clone());
  }
  return tensors;
}

// Source weights that differ from any fresh model's.
NamedTensors SourceWeights(int64_t num_classes, int64_t width = 4) {
  TinyNet source(num_classes, /*in_channels=*/1, width);
  NamedTensors tensors = StateOf(source);
  for (auto& [name, tensor] : tensors) {
    if (tensor.is_floating_point()) tensor.uniform_(0.5, 1.5);
  }
  return tensors;
}

const torch::Tensor& Get(const NamedTensors& tensors, const std::string& name) {
  for (const auto& [key, tensor] : tensors) {
    if (key == name) return tensor;
  }
  static const torch::Tensor kNone;
  return kNone;
}

TEST(LoadStateDictTest, CopiesEveryTensor) {
  const NamedTensors source = SourceWeights(3);
  TinyNet model(3);
  std::ostringstream log;
  ASSERT_TRUE(LoadStateDict(model, source, "w.pt", &log).ok());
  for (const auto& [name, tensor] : StateOf(model)) {
    EXPECT_TRUE(tensor.equal(Get(source, name))) << name;
  }
  EXPECT_EQ(log.str(), "weights: loaded 9 of 9 tensors from w.pt\n");
}

TEST(LoadStateDictTest, AHeadForOtherClassesKeepsItsFreshInitAndIsLogged) {
  const NamedTensors source = SourceWeights(1000);
  TinyNet model(2);
  const NamedTensors fresh = StateOf(model);
  std::ostringstream log;
  ASSERT_TRUE(LoadStateDict(model, source, "imagenet.pt", &log).ok());
  for (const auto& [name, tensor] : StateOf(model)) {
    const bool head = name.rfind("fc.", 0) == 0;
    EXPECT_TRUE(tensor.equal(head ? Get(fresh, name) : Get(source, name))) << name;
  }
  EXPECT_EQ(log.str(),
            "weights: loaded 7 of 9 tensors from imagenet.pt\n"
            "weights: kept the fresh initialisation of fc.weight (file 1000x4, model 2x4), "
            "fc.bias (file 1000, model 2): the classifier head's shape differs from the file's "
            "(another number of classes)\n");
}

TEST(LoadStateDictTest, ABackboneOfAnotherShapeIsAnErrorAndChangesNothing) {
  const NamedTensors source = SourceWeights(3, /*width=*/8);
  TinyNet model(3, /*in_channels=*/1, /*width=*/4);
  const NamedTensors before = StateOf(model);
  const absl::Status status = LoadStateDict(model, source, "wide.pt", nullptr);
  EXPECT_EQ(status.message(),
            "weights: wide.pt does not fit this model (another architecture, depth or width?); "
            "shapes differ: conv.weight (file 8x1x3x3, model 4x1x3x3), conv.bias (file 8, "
            "model 4), bn.weight (file 8, model 4), bn.bias (file 8, model 4), "
            "bn.running_mean (file 8, model 4), bn.running_var (file 8, model 4)");
  for (const auto& [name, tensor] : StateOf(model)) {
    EXPECT_TRUE(tensor.equal(Get(before, name))) << name;
  }
}

TEST(LoadStateDictTest, MissingAndUnexpectedTensorsAreNamed) {
  NamedTensors source = SourceWeights(3);
  source.erase(source.begin());  // conv.weight
  source.emplace_back("extra.weight", torch::zeros({2, 2}));
  TinyNet model(3);
  EXPECT_EQ(LoadStateDict(model, source, "w.pt", nullptr).message(),
            "weights: w.pt does not fit this model (another architecture, depth or width?); "
            "missing from the file: conv.weight (4x1x3x3); not in the model: extra.weight (2x2)");
}

TEST(LoadStateDictTest, AWrongDtypeIsAnError) {
  NamedTensors source = SourceWeights(3);
  for (auto& [name, tensor] : source) {
    if (name == "bn.weight") tensor = tensor.to(torch::kFloat64);
  }
  TinyNet model(3);
  EXPECT_EQ(LoadStateDict(model, source, "w.pt", nullptr).message(),
            "weights: w.pt does not fit this model (another architecture, depth or width?); "
            "dtypes differ: bn.weight (file Double, model Float)");
}

// As PyTorch's load_state_dict copies a float16 tensor into a float32
// parameter; only conversions that hold every value exactly are taken.
TEST(LoadStateDictTest, Float16AndBfloat16FillFloat32ExactlyAndAreLogged) {
  NamedTensors source = SourceWeights(3);
  NamedTensors narrow = source;
  for (auto& [name, tensor] : narrow) {
    if (name == "conv.weight" || name == "bn.weight") tensor = tensor.to(torch::kHalf);
    if (name == "fc.weight") tensor = tensor.to(torch::kBFloat16);
  }
  TinyNet model(3);
  std::ostringstream log;
  ASSERT_TRUE(LoadStateDict(model, narrow, "half.safetensors", &log).ok());
  for (const auto& [name, tensor] : StateOf(model)) {
    EXPECT_EQ(tensor.scalar_type(), Get(source, name).scalar_type()) << name;
    EXPECT_TRUE(tensor.equal(Get(narrow, name).to(tensor.scalar_type()))) << name;
  }
  EXPECT_EQ(log.str(),
            "weights: loaded 9 of 9 tensors from half.safetensors\n"
            "weights: converted 1 tensor from BFloat16 to Float, which holds every value "
            "exactly\n"
            "weights: converted 2 tensors from Half to Float, which holds every value exactly\n");
}

// A model with a tensor "table" whose length is a setting of the model
// rather than of its architecture, as a ViT's position embeddings follow its
// image size: it converts a table of another length to its own (the file's
// mean everywhere) where `conversion` says so.
class TableNet : public Model {
 public:
  enum Conversion { kMean, kOff, kWrongShape, kThrows };

  TableNet(int64_t length, Conversion conversion) : conversion_(conversion) {
    table_ = register_parameter("table", torch::zeros({length}));
    fc_ = register_module("fc", torch::nn::Linear(4, 3));
  }
  torch::Tensor forward(const torch::Tensor& images) override {
    return fc_(images.flatten(1)) + table_.sum();
  }
  std::vector<std::string> head_prefixes() const override { return {"fc."}; }

  absl::StatusOr<torch::Tensor> AdaptLoadedTensor(const std::string& name,
                                                  const torch::Tensor& loaded,
                                                  const torch::Tensor& target) const override {
    if (name != "table") return torch::Tensor();
    switch (conversion_) {
      case kMean:
        return loaded.mean().expand(target.sizes()).clone();
      case kOff:
        return absl::InvalidArgumentError("table: another length; set convert_table: true");
      case kWrongShape:
        return loaded.mean().expand({target.size(0) + 1}).clone();
      case kThrows:
        return loaded.reshape({7, 7});
    }
    return torch::Tensor();
  }

  const torch::Tensor& table() const { return table_; }

 private:
  Conversion conversion_;
  torch::Tensor table_;
  torch::nn::Linear fc_{nullptr};
};

NamedTensors TableWeights(int64_t length) {
  TableNet source(length, TableNet::kOff);
  NamedTensors tensors = StateOf(source);
  for (auto& [name, tensor] : tensors) {
    if (name == "table") {
      tensor = torch::arange(length, torch::kFloat);
    } else {
      tensor.uniform_(0.5, 1.5);
    }
  }
  return tensors;
}

TEST(LoadStateDictTest, ATensorTheModelConvertsIsLoadedConvertedAndLogged) {
  const NamedTensors source = TableWeights(6);  // 0..5, mean 2.5
  TableNet model(3, TableNet::kMean);
  std::ostringstream log;
  ASSERT_TRUE(LoadStateDict(model, source, "w.pt", &log).ok());
  EXPECT_TRUE(model.table().equal(torch::full({3}, 2.5)));
  EXPECT_TRUE(model.named_parameters()["fc.weight"].equal(Get(source, "fc.weight")));
  EXPECT_EQ(log.str(),
            "weights: loaded 3 of 3 tensors from w.pt\n"
            "weights: converted table (file 6, model 3) to the model's shape, as its options "
            "ask\n");
}

TEST(LoadStateDictTest, TheModelsConversionIsNotAskedForTensorsThatFit) {
  const NamedTensors source = TableWeights(3);
  TableNet model(3, TableNet::kMean);
  ASSERT_TRUE(LoadStateDict(model, source, "w.pt", nullptr).ok());
  EXPECT_TRUE(model.table().equal(torch::arange(3, torch::kFloat)));
}

TEST(LoadStateDictTest, AConversionTheOptionsLeaveOffIsAnErrorWithTheModelsMessage) {
  const NamedTensors source = TableWeights(6);
  TableNet model(3, TableNet::kOff);
  const NamedTensors before = StateOf(model);
  EXPECT_EQ(LoadStateDict(model, source, "w.pt", nullptr).message(),
            "weights: w.pt does not fit this model (another architecture, depth or width?); "
            "table: another length; set convert_table: true");
  for (const auto& [name, tensor] : StateOf(model)) {
    EXPECT_TRUE(tensor.equal(Get(before, name))) << name;
  }
}

TEST(LoadStateDictTest, AConversionToAnotherShapeOrThatThrowsIsAnError) {
  const NamedTensors source = TableWeights(6);
  TableNet wrong_shape(3, TableNet::kWrongShape);
  EXPECT_EQ(LoadStateDict(wrong_shape, source, "w.pt", nullptr).message(),
            "weights: w.pt does not fit this model (another architecture, depth or width?); "
            "shapes differ: table (file 6, model 3)");
  TableNet throws(3, TableNet::kThrows);
  const absl::Status status = LoadStateDict(throws, source, "w.pt", nullptr);
  EXPECT_THAT(std::string(status.message()),
              ::testing::StartsWith("weights: w.pt does not fit this model (another "
                                    "architecture, depth or width?); table: converting the "
                                    "file's 6 to the model's 3: "));
}

TEST(FreezeBackboneTest, FrozenParametersStayBitIdenticalThroughOptimizerSteps) {
  torch::manual_seed(0);
  TinyNet model(3);
  std::ostringstream log;
  ASSERT_TRUE(FreezeBackbone(model, &log).ok());
  EXPECT_EQ(log.str(),
            "freeze_backbone: froze 4 parameter tensors (48 values); training only fc.weight, "
            "fc.bias\n");
  const std::vector<torch::Tensor> trainable = TrainableParameters(model);
  ASSERT_EQ(trainable.size(), 2u);
  const NamedTensors before = StateOf(model);
  // AdamW's weight decay would move a frozen parameter handed to it anyway.
  torch::optim::AdamW optimizer(trainable, torch::optim::AdamWOptions(0.1).weight_decay(0.5));
  const torch::Tensor images = torch::randn({8, 1, 6, 6});
  const torch::Tensor labels = torch::randint(3, {8}, torch::kLong);
  for (int step = 0; step < 3; ++step) {
    optimizer.zero_grad();
    torch::nll_loss(torch::log_softmax(model.forward(images), 1), labels).backward();
    optimizer.step();
  }
  for (const auto& item : model.named_parameters()) {
    const bool head = item.key().rfind("fc.", 0) == 0;
    EXPECT_EQ(item.value().equal(Get(before, item.key())), !head) << item.key();
    EXPECT_EQ(item.value().requires_grad(), head) << item.key();
  }
}

TEST(FreezeBackboneTest, AModelWithoutAHeadCannotFreeze) {
  class Headless : public Model {
   public:
    torch::Tensor forward(const torch::Tensor& images) override { return images; }
  } model;
  EXPECT_EQ(FreezeBackbone(model, nullptr).message(),
            "freeze_backbone: this model names no classifier head");
}

}  // namespace
}  // namespace pipeline
