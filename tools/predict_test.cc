// Fine-tuning and inference as a user runs them: prepare_data writes
// Fashion-MNIST images, the trainer trains small_cnn on them, then the
// predict and export_weights binaries run on its checkpoint, and a second
// run starts from the first one's weights with its backbone frozen.

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "pipeline/checkpoint/checkpoint.h"
#include "pipeline/config/config_loader.h"
#include "pipeline/config/resolve.h"
#include "pipeline/image/image_codec.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/plugin_test_util.h"
#include "pipeline/trainer/trainer.h"
#include "pipeline/weights/build_model.h"
#include "pipeline/weights/restore.h"
#include "pipeline/weights/safetensors.h"
#include "pipeline/weights/state_dict_reader.h"
#include "torch/csrc/autograd/grad_mode.h"
#include "torch/optim/sgd.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct Result {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

Result RunCommand(const std::string& command) {
  const std::string err_path = ::testing::TempDir() + "/stderr.txt";
  FILE* pipe = popen((command + " 2>" + err_path).c_str(), "r");
  Result result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.out.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream err(err_path);
  result.err.assign(std::istreambuf_iterator<char>(err), {});
  return result;
}

// `model_fields` go beside the model's name (weights, freeze_backbone).
std::string Config(const std::string& data, const std::string& output_dir,
                   const std::string& model_fields) {
  const std::string transforms = R"pb(
      transforms { name: "to_float" }
      transforms {
        name: "normalize"
        options { [type.googleapis.com/pipeline.NormalizeOptions] { mean: 0.286 std: 0.353 } }
      })pb";
  return absl::StrCat(R"pb(
    model {
      name: "small_cnn"
      options { [type.googleapis.com/pipeline.SmallCnnOptions] { width: 8 } }
      )pb",
                      model_fields, R"pb(
    }
    train_data {
      dataset {
        name: "image_folder"
        options { [type.googleapis.com/pipeline.ImageFolderOptions] { root: ")pb",
                      data, R"pb(/train" } }
      }
      transforms { name: "random_horizontal_flip" })pb",
                      transforms, R"pb(
    }
    validation_data {
      dataset {
        name: "image_folder"
        options { [type.googleapis.com/pipeline.ImageFolderOptions] { root: ")pb",
                      data, R"pb(/validation" } }
      })pb",
                      transforms, R"pb(
      batch_size: 50
    }
    optimizer {
      name: "adamw"
      options { [type.googleapis.com/pipeline.AdamWOptions] { lr: 0.01 weight_decay: 0.05 } }
    }
    trainer { epochs: 2 batch_size: 32 seed: 5 }
    output_dir: ")pb",
                      output_dir, "\"\n");
}

absl::StatusOr<TrainSummary> TrainWith(const std::string& text, std::string* log_text) {
  PipelineConfig config;
  if (absl::Status status = ParseTextProto(text, "test", &config); !status.ok()) return status;
  auto resolved = ResolveConfig(config);
  if (!resolved.ok()) return resolved.status();
  std::ostringstream log;
  auto summary = Train(*resolved, {.dry_run = false, .log = &log});
  *log_text = log.str();
  return summary;
}

class PredictTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = ::testing::TempDir() + "/predict_test";
    data_ = root_ + "/fashion";
    const Result prepared =
        RunCommand(absl::StrCat("tools/prepare_data --output=", data_,
                         " --classes=Trouser,Pullover,Bag,Sneaker --limit_per_class=150"));
    ASSERT_EQ(prepared.exit_code, 0) << prepared.out << prepared.err;
    std::string log;
    auto summary = TrainWith(Config(data_, root_ + "/run", ""), &log);
    ASSERT_TRUE(summary.ok()) << summary.status() << "\n" << log;
    validation_accuracy_ = summary->val_accuracy;
    checkpoint_ = root_ + "/run/checkpoint_epoch_2.pt";
  }

  static std::string root_, data_, checkpoint_;
  static double validation_accuracy_;
};

std::string PredictTest::root_, PredictTest::data_, PredictTest::checkpoint_;
double PredictTest::validation_accuracy_ = 0;

TEST_F(PredictTest, GivesTheValidationPassesAccuracyOnTheSameImages) {
  ASSERT_TRUE(fs::exists(checkpoint_));
  const Result result = RunCommand(absl::StrCat("tools/predict --checkpoint=", checkpoint_,
                                         " --output=csv --top_k=2 --batch_size=50 ", data_,
                                         "/validation"));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::vector<std::string> lines = absl::StrSplit(result.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 601u);
  EXPECT_EQ(lines[0], "path,predicted,probability,top2,probability2");
  int correct = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> fields = absl::StrSplit(lines[i], ',');
    ASSERT_EQ(fields.size(), 5u) << lines[i];
    if (fs::path(fields[0]).parent_path().filename() == fields[1]) ++correct;
    double p1 = 0, p2 = 0;
    ASSERT_TRUE(absl::SimpleAtod(fields[2], &p1) && absl::SimpleAtod(fields[4], &p2));
    EXPECT_GE(p1, p2);
  }
  // The same images, transforms and weights: the same predictions.
  EXPECT_EQ(correct, static_cast<int>(std::lround(validation_accuracy_ * 600)));
  EXPECT_GT(validation_accuracy_, 0.6);  // four classes: chance is 25%
  EXPECT_THAT(result.err,
              HasSubstr(absl::StrFormat("predicted 600 images; accuracy %.2f%% (%d of 600 images "
                                        "in folders named after a class)",
                                        100.0 * correct / 600, correct)));
}

TEST_F(PredictTest, TextOutputListsTheTopClassesOfOneImage) {
  const std::string image =
      data_ + "/validation/Bag/" +
      fs::directory_iterator(data_ + "/validation/Bag")->path().filename().string();
  const Result result =
      RunCommand(absl::StrCat("tools/predict --checkpoint=", checkpoint_, " --top_k=9 ", image));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // top_k beyond the four classes gives all four.
  EXPECT_THAT(result.out,
              ::testing::MatchesRegex(
                  image + ": [A-Za-z]+ \\(0\\.[0-9]{4}\\)(, [A-Za-z]+ \\(0\\.[0-9]{4}\\)){3}\n"));
}

TEST_F(PredictTest, AColourJpegOfAnotherSizeIsReducedToTheModelsOneChannel) {
  // The model trained on 1-channel 28x28 PNGs; a 3-channel 40x30 JPEG is
  // decoded to gray for it (small_cnn pools globally, so any size works).
  Image image;
  image.height = 30;
  image.width = 40;
  image.channels = 3;
  for (int i = 0; i < 30 * 40 * 3; ++i) image.u8.push_back(static_cast<uint8_t>(i * 7));
  const std::string path = root_ + "/colour.jpg";
  std::ofstream(path, std::ios::binary) << EncodeJpeg(image, 90).value();
  const Result result =
      RunCommand(absl::StrCat("tools/predict --checkpoint=", checkpoint_, " --top_k=1 ", path));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, ::testing::MatchesRegex(path + ": [A-Za-z]+ \\(0\\.[0-9]{4}\\)\n"));
}

TEST_F(PredictTest, AnImageThatCannotBeDecodedIsNamedAndTheOthersArePredicted) {
  const std::string folder = root_ + "/mixed/Bag";
  fs::create_directories(folder);
  int copied = 0;
  for (const auto& entry : fs::directory_iterator(data_ + "/validation/Bag")) {
    fs::copy_file(entry.path(), folder + "/" + entry.path().filename().string(),
                  fs::copy_options::overwrite_existing);
    if (++copied == 3) break;
  }
  std::ofstream(folder + "/broken.png") << "not a PNG at all";
  const Result result = RunCommand(
      absl::StrCat("tools/predict --checkpoint=", checkpoint_, " --output=csv ", folder));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, HasSubstr(folder + "/broken.png"));
  EXPECT_THAT(result.err, HasSubstr("predicted 3 images; 1 could not be read"));
  EXPECT_EQ(std::count(result.out.begin(), result.out.end(), '\n'), 4);  // header + 3
}

TEST_F(PredictTest, ACheckpointThatDoesNotFitItsConfigIsAClearError) {
  // small_cnn weights under a config that names resnet.
  auto loaded = ReadCheckpoint(checkpoint_);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  PipelineConfig config;
  ASSERT_TRUE(ParseTextProto(loaded->contents.resolved_config, "config", &config).ok());
  config.mutable_model()->set_name("resnet");
  config.mutable_model()->clear_options();
  auto model = testing::CreatePlugin<Model>(
      "name: \"small_cnn\" options { [type.googleapis.com/pipeline.SmallCnnOptions] { width: 8 } }",
      ModelContext{4, 1});
  ASSERT_TRUE(model.ok());
  auto restored = RestoreModel(checkpoint_);
  ASSERT_TRUE(restored.ok()) << restored.status();
  torch::optim::SGD optimizer((*model)->parameters(), torch::optim::SGDOptions(0.1));
  const std::string path = root_ + "/mismatched.pt";
  CheckpointContents contents = loaded->contents;
  contents.resolved_config = ConfigToText(config);
  ASSERT_TRUE(WriteCheckpoint(path, **model, optimizer, contents).ok());

  const Result result =
      RunCommand(absl::StrCat("tools/predict --checkpoint=", path, " ", data_, "/validation/Bag"));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr(absl::StrCat("error: model \"resnet\" of the checkpoint's "
                                                 "config: weights: ",
                                                 path, " does not fit this model")));
  EXPECT_THAT(result.err, HasSubstr("missing from the file: conv1.weight (64x1x7x7)"));
}

TEST_F(PredictTest, NotACheckpointIsAClearError) {
  const Result result = RunCommand(absl::StrCat(
      "tools/predict --checkpoint=pipeline/weights/testdata/small_cnn_state_dict.pt ", data_));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err,
              HasSubstr("error: pipeline/weights/testdata/small_cnn_state_dict.pt: is not a "
                        "checkpoint written by train"));
}

TEST_F(PredictTest, ExportedWeightsReadBackAndStartAModelThatGivesTheSameLogits) {
  const std::string exported = root_ + "/model_state_dict.pt";
  const Result result = RunCommand(
      absl::StrCat("tools/export_weights --checkpoint=", checkpoint_, " --output=", exported));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out,
              HasSubstr("wrote 14 tensors of model \"small_cnn\" (epoch 2, 4 classes)"));
  auto tensors = ReadStateDict(exported);
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  EXPECT_EQ(tensors->front().first, "stages.0.conv.weight");  // state_dict order
  EXPECT_EQ(tensors->back().first, "fc.bias");

  auto restored = RestoreModel(checkpoint_);
  ASSERT_TRUE(restored.ok()) << restored.status();
  ModelConfig model;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      absl::StrCat("name: \"small_cnn\" options { [type.googleapis.com/pipeline.SmallCnnOptions] "
                   "{ width: 8 } } weights: \"",
                   exported, "\""),
      &model));
  auto reloaded = BuildModel(model, {4, 1});
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  (*reloaded)->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor images = torch::randn({4, 1, 28, 28});
  EXPECT_TRUE((*reloaded)->forward(images).equal(restored->model->forward(images)));
}

TEST_F(PredictTest, ExportedSafetensorsHoldTheSameTensorsAndStartTheSameModel) {
  const std::string pt = root_ + "/exported.pt";
  const std::string safetensors = root_ + "/exported.safetensors";
  const std::string export_weights = "tools/export_weights --checkpoint=" + checkpoint_;
  ASSERT_EQ(RunCommand(absl::StrCat(export_weights, " --output=", pt)).exit_code, 0);
  const Result result =
      RunCommand(absl::StrCat(export_weights, " --format=safetensors --output=", safetensors));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr(absl::StrCat("wrote 14 tensors of model \"small_cnn\" "
                                                 "(epoch 2, 4 classes) to ",
                                                 safetensors)));
  auto expected = ReadStateDict(pt);
  ASSERT_TRUE(expected.ok()) << expected.status();
  auto contents = ReadSafetensors(safetensors);
  ASSERT_TRUE(contents.ok()) << contents.status();
  EXPECT_EQ(contents->metadata, (SafetensorsMetadata{{"format", "pt"}}));
  ASSERT_EQ(contents->tensors.size(), expected->size());
  for (const auto& [name, tensor] : *expected) {
    const auto it = std::find_if(contents->tensors.begin(), contents->tensors.end(),
                                 [&](const auto& entry) { return entry.first == name; });
    ASSERT_NE(it, contents->tensors.end()) << name;
    EXPECT_EQ(it->second.scalar_type(), tensor.scalar_type()) << name;
    EXPECT_TRUE(it->second.equal(tensor)) << name;
  }

  auto restored = RestoreModel(checkpoint_);
  ASSERT_TRUE(restored.ok()) << restored.status();
  ModelConfig model;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      absl::StrCat("name: \"small_cnn\" options { [type.googleapis.com/pipeline.SmallCnnOptions] "
                   "{ width: 8 } } weights: \"",
                   safetensors, "\""),
      &model));
  auto reloaded = BuildModel(model, {4, 1});
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  (*reloaded)->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor images = torch::randn({4, 1, 28, 28});
  EXPECT_TRUE((*reloaded)->forward(images).equal(restored->model->forward(images)));

  const Result bad =
      RunCommand(absl::StrCat(export_weights, " --format=onnx --output=", root_, "/x.onnx"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--format: \"onnx\" is neither pt nor safetensors"));
}

TEST_F(PredictTest, FineTuningWithAFrozenBackboneChangesOnlyTheHead) {
  // Two of the four classes: the head is replaced, the backbone frozen.
  const std::string subset = root_ + "/subset";
  for (const char* split : {"train", "validation"}) {
    for (const char* name : {"Bag", "Sneaker"}) {
      fs::create_directories(absl::StrCat(subset, "/", split));
      fs::copy(absl::StrCat(data_, "/", split, "/", name),
               absl::StrCat(subset, "/", split, "/", name),
               fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    }
  }
  std::string log;
  auto summary =
      TrainWith(Config(subset, root_ + "/finetune",
                       absl::StrCat("weights: \"", checkpoint_, "\" freeze_backbone: true")),
                &log);
  ASSERT_TRUE(summary.ok()) << summary.status() << "\n" << log;
  EXPECT_THAT(log, HasSubstr(absl::StrCat("weights: loaded 12 of 14 tensors from ", checkpoint_,
                                          "\nweights: kept the fresh initialisation of fc.weight "
                                          "(file 4x16, model 2x16), fc.bias (file 4, model 2)")));
  EXPECT_THAT(log, HasSubstr("freeze_backbone: froze 6 parameter tensors"));

  auto before = ReadCheckpoint(checkpoint_);
  auto after = ReadCheckpoint(root_ + "/finetune/checkpoint_epoch_2.pt");
  ASSERT_TRUE(before.ok() && after.ok());
  std::map<std::string, torch::Tensor> original(before->model.begin(), before->model.end());
  auto restored = RestoreModel(root_ + "/finetune/checkpoint_epoch_2.pt");
  ASSERT_TRUE(restored.ok()) << restored.status();
  int frozen = 0;
  for (const auto& item : restored->model->named_parameters()) {
    if (item.key().rfind("fc.", 0) == 0) continue;
    EXPECT_TRUE(item.value().equal(original[item.key()])) << item.key() << " moved";
    ++frozen;
  }
  EXPECT_EQ(frozen, 6);
  EXPECT_EQ(after->contents.class_names, (std::vector<std::string>{"Bag", "Sneaker"}));
}

}  // namespace
}  // namespace pipeline
