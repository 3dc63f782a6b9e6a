// Trains ResNet18 for a few dozen steps on real Fashion-MNIST images, through
// the same config path a user takes, and checks it learns.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/config/config_loader.h"
#include "pipeline/testing/torch_warnings.h"
#include "pipeline/trainer/resolve.h"
#include "pipeline/trainer/trainer.h"

namespace pipeline {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kConfig[] = R"pb(
  model {
    name: "resnet"
    options { [type.googleapis.com/pipeline.ResNetOptions] { depth: 18 } }
  }
  train_data {
    dataset {
      name: "fashion_mnist"
      options { [type.googleapis.com/pipeline.FashionMnistOptions] { split: TRAIN limit: 2048 } }
    }
    transforms { name: "random_horizontal_flip" }
    transforms { name: "to_float" }
    transforms {
      name: "normalize"
      options { [type.googleapis.com/pipeline.NormalizeOptions] { mean: 0.286 std: 0.353 } }
    }
  }
  validation_data {
    dataset {
      name: "fashion_mnist"
      options { [type.googleapis.com/pipeline.FashionMnistOptions] { split: TEST limit: 500 } }
    }
    transforms { name: "to_float" }
    transforms {
      name: "normalize"
      options { [type.googleapis.com/pipeline.NormalizeOptions] { mean: 0.286 std: 0.353 } }
    }
    batch_size: 250
  }
  optimizer {
    name: "adam"
    options { [type.googleapis.com/pipeline.AdamOptions] { lr: 0.002 } }
  }
  learning_rate { warmup_steps: 5 }
  trainer { epochs: 1 batch_size: 32 max_steps: 48 seed: 3 log_interval: 8 }
)pb";

std::vector<double> LossesFromLog(const std::string& log) {
  std::vector<double> losses;
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t at = line.find(" loss ");
    if (line.find(" step ") != std::string::npos && at != std::string::npos) {
      losses.push_back(std::stod(line.substr(at + 6)));
    }
  }
  return losses;
}

TEST(TrainEndToEndTest, ResNet18LearnsFashionMnist) {
  PipelineConfig config;
  ASSERT_TRUE(ParseTextProto(kConfig, "test", &config).ok());
  const std::string output_dir = ::testing::TempDir() + "/e2e_run";
  config.set_output_dir(output_dir);
  auto resolved = ResolveConfig(config);
  ASSERT_TRUE(resolved.ok()) << resolved.status();

  std::ostringstream log, events;
  auto summary = Train(*resolved, {.dry_run = false, .log = &log, .events = &events});
  ASSERT_TRUE(summary.ok()) << summary.status() << "\n" << log.str();

  EXPECT_EQ(summary->steps, 48);
  // Losses of the windows of 8 steps: the last is well below the first
  // (ln 10 = 2.30 at chance).
  const std::vector<double> losses = LossesFromLog(log.str());
  ASSERT_EQ(losses.size(), 6u) << log.str();
  EXPECT_LT(losses.back(), 0.75 * losses.front()) << log.str();
  // Ten classes: chance is 10%.
  EXPECT_GT(summary->val_accuracy, 0.5) << log.str();
  EXPECT_GT(summary->images_per_sec, 0);

  EXPECT_THAT(events.str(), HasSubstr("{\"event\":\"summary\",\"images_per_sec\":"));
  EXPECT_TRUE(std::filesystem::exists(output_dir + "/checkpoint_epoch_1.pt"));
  EXPECT_FALSE(std::filesystem::exists(output_dir + "/checkpoint_epoch_1.pt.tmp"));
  EXPECT_TRUE(std::filesystem::exists(output_dir + "/config.textproto"));
  std::ifstream metrics(output_dir + "/metrics.jsonl");
  std::string first_line;
  std::getline(metrics, first_line);
  EXPECT_THAT(first_line, HasSubstr("\"event\":\"epoch\",\"epoch\":1,\"step\":48"));
}

// Channels-last weights and inputs with the forward pass in bf16 autocast,
// separately and together: the loss falls and validation accuracy comes
// within 8 points of the same run in plain float32 (the first). LibTorch
// raises no deprecation warning: 2.4+ warns on every call of autocast's
// per-device switches, thousands of lines a run.
TEST(TrainEndToEndTest, ChannelsLastAndBf16AutocastStillLearn) {
  double reference_accuracy = -1, reference_loss = -1;
  for (const auto& [channels_last, bf16] : {std::pair{false, false}, std::pair{true, false},
                                            std::pair{false, true}, std::pair{true, true}}) {
    PipelineConfig config;
    ASSERT_TRUE(ParseTextProto(kConfig, "test", &config).ok());
    config.mutable_model()->Clear();
    config.mutable_model()->set_name("small_cnn");
    config.mutable_trainer()->set_channels_last(channels_last);
    if (bf16) config.mutable_trainer()->set_precision(TrainerConfig::BF16_AUTOCAST);
    config.set_output_dir(::testing::TempDir() + "/formats_run");
    auto resolved = ResolveConfig(config);
    ASSERT_TRUE(resolved.ok()) << resolved.status();
    std::ostringstream log;
    testing::TorchWarningRecorder warnings;
    auto summary = Train(*resolved, {.dry_run = false, .log = &log});
    ASSERT_TRUE(summary.ok()) << summary.status() << "\n" << log.str();
    EXPECT_THAT(warnings.messages(), Not(Contains(HasSubstr("deprecated"))));
    const std::vector<double> losses = LossesFromLog(log.str());
    ASSERT_EQ(losses.size(), 6u) << log.str();
    EXPECT_LT(losses.back(), 0.75 * losses.front())
        << "channels_last " << channels_last << " bf16 " << bf16 << "\n" << log.str();
    if (reference_accuracy < 0) {
      reference_accuracy = summary->val_accuracy;
      reference_loss = summary->val_loss;
    }
    // bf16 arithmetic does change the numbers: the setting took effect.
    if (bf16) {
      EXPECT_NE(summary->val_loss, reference_loss);
    }
    EXPECT_GT(summary->val_accuracy, 0.3) << log.str();
    EXPECT_NEAR(summary->val_accuracy, reference_accuracy, 0.08)
        << "channels_last " << channels_last << " bf16 " << bf16 << "\n" << log.str();
  }
}

TEST(TrainEndToEndTest, DryRunBuildsEverythingAndTrainsNothing) {
  PipelineConfig config;
  ASSERT_TRUE(ParseTextProto(kConfig, "test", &config).ok());
  config.set_output_dir(::testing::TempDir() + "/dry_run");
  auto resolved = ResolveConfig(config);
  ASSERT_TRUE(resolved.ok());
  std::ostringstream log;
  auto summary = Train(*resolved, {.dry_run = true, .log = &log});
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->steps, 0);
  EXPECT_THAT(log.str(), HasSubstr("model resnet, 11175370 parameters"));
  EXPECT_FALSE(std::filesystem::exists(::testing::TempDir() + "/dry_run"));
}

TEST(TrainEndToEndTest, ANonFiniteLossStopsTheRunNamingTheStep) {
  PipelineConfig config;
  ASSERT_TRUE(ParseTextProto(R"pb(
                               model { name: "small_cnn" }
                               train_data {
                                 dataset {
                                   name: "synthetic"
                                   options {
                                     [type.googleapis.com/pipeline.SyntheticOptions] {
                                       num_samples: 64 height: 8 width: 8 channels: 1
                                     }
                                   }
                                 }
                               }
                               optimizer {
                                 name: "sgd"
                                 options { [type.googleapis.com/pipeline.SgdOptions] { lr: 1e30 } }
                               }
                               trainer { batch_size: 8 epochs: 3 }
                             )pb",
                             "test", &config)
                  .ok());
  config.set_output_dir(::testing::TempDir() + "/nan_run");
  auto resolved = ResolveConfig(config);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  std::ostringstream log;
  auto summary = Train(*resolved, {.log = &log});
  ASSERT_FALSE(summary.ok()) << log.str();
  EXPECT_THAT(summary.status().message(), HasSubstr("): the training loss is "));
  EXPECT_THAT(summary.status().message(), HasSubstr("Lower the learning rate"));
  EXPECT_THAT(std::string(summary.status().message()), ::testing::StartsWith("step "));
}

TEST(TrainEndToEndTest, ResolveReportsEveryProblemAtOnce) {
  PipelineConfig config;
  ASSERT_TRUE(ParseTextProto(R"pb(
                               model { name: "resnt" }
                               train_data {
                                 dataset { name: "fashion_mnist" }
                                 transforms { name: "normalize" }
                               }
                               optimizer { name: "sgd" options { [type.googleapis.com/pipeline.AdamOptions] {} } }
                               trainer { epochs: 0 }
                             )pb",
                             "test", &config)
                  .ok());
  auto resolved = ResolveConfig(config);
  ASSERT_FALSE(resolved.ok());
  const std::string message(resolved.status().message());
  EXPECT_THAT(message, HasSubstr("trainer.epochs: 0; must be at least 1"));
  EXPECT_THAT(message, HasSubstr("model.name: \"resnt\" is not a registered model; registered: "));
  EXPECT_THAT(message, HasSubstr(", resnet, "));
  EXPECT_THAT(message, HasSubstr(". Did you mean \"resnet\"?"));
  EXPECT_THAT(message, HasSubstr("train_data.transforms[0].options: normalize: set mean and std"));
  EXPECT_THAT(message, HasSubstr("optimizer.options: optimizer \"sgd\" takes options of type "
                                 "pipeline.SgdOptions but the config gives pipeline.AdamOptions"));
}

}  // namespace
}  // namespace pipeline
