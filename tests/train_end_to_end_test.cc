// Trains ResNet18 for a few dozen steps on real Fashion-MNIST images, through
// the same config path a user takes, and checks it learns.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/config/config_loader.h"
#include "pipeline/config/resolve.h"
#include "pipeline/testing/torch_warnings.h"
#include "pipeline/trainer/trainer.h"
#include "pipeline/util/cpu_features.h"

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

// The small model's run of kConfig in `precision` and `memory_format`.
struct FormatRun {
  std::vector<double> losses;  // of the logged windows of 8 steps
  double val_accuracy = 0, val_loss = 0;
};

FormatRun RunInFormat(TrainerConfig::Precision precision, MemoryFormat::Value memory_format) {
  PipelineConfig config;
  EXPECT_TRUE(ParseTextProto(kConfig, "test", &config).ok());
  config.mutable_model()->Clear();
  config.mutable_model()->set_name("small_cnn");
  config.mutable_trainer()->set_precision(precision);
  config.mutable_trainer()->set_memory_format(memory_format);
  config.set_output_dir(::testing::TempDir() + "/formats_run");
  auto resolved = ResolveConfig(config);
  EXPECT_TRUE(resolved.ok()) << resolved.status();
  std::ostringstream log;
  testing::TorchWarningRecorder warnings;
  auto summary = Train(*resolved, {.dry_run = false, .log = &log});
  EXPECT_TRUE(summary.ok()) << summary.status() << "\n" << log.str();
  // LibTorch 2.4+ warns on every call of autocast's per-device switches,
  // thousands of lines a run: none may reach the user.
  EXPECT_THAT(warnings.messages(), Not(Contains(HasSubstr("deprecated"))));
  FormatRun run;
  run.losses = LossesFromLog(log.str());
  EXPECT_EQ(run.losses.size(), 6u) << log.str();
  if (summary.ok()) run.val_accuracy = summary->val_accuracy, run.val_loss = summary->val_loss;
  return run;
}

// Channels-last weights and inputs compute the same float32 arithmetic in
// another order: the run matches the contiguous one closely.
TEST(TrainEndToEndTest, ChannelsLastLearnsAsContiguous) {
  const FormatRun contiguous = RunInFormat(TrainerConfig::FP32, MemoryFormat::CONTIGUOUS);
  const FormatRun channels_last = RunInFormat(TrainerConfig::FP32, MemoryFormat::CHANNELS_LAST);
  ASSERT_EQ(contiguous.losses.size(), 6u);
  ASSERT_EQ(channels_last.losses.size(), 6u);
  EXPECT_LT(contiguous.losses.back(), contiguous.losses.front());
  EXPECT_NEAR(channels_last.losses.back(), contiguous.losses.back(),
              0.05 * contiguous.losses.front());
  EXPECT_NEAR(channels_last.val_accuracy, contiguous.val_accuracy, 0.03);
}

// bf16 autocast, contiguous and channels-last, against float32 over the same
// steps: the loss falls at least 70% as far, and validation accuracy comes
// within 8 points. Where bf16 is emulated (no AVX-512 BF16 or AMX) it would
// take over 100x as long and prove nothing about speed: skipped there.
TEST(TrainEndToEndTest, Bf16AutocastLearnsAsFloat32) {
  const Bf16Support bf16 = CpuBf16Support(HostCpuFeatures());
  if (!bf16.native) GTEST_SKIP() << "skipped: this CPU has no native bf16 (" << bf16.detail << ")";
  const FormatRun reference = RunInFormat(TrainerConfig::FP32, MemoryFormat::CONTIGUOUS);
  ASSERT_EQ(reference.losses.size(), 6u);
  const double reference_fall = reference.losses.front() - reference.losses.back();
  ASSERT_GT(reference_fall, 0);
  for (const MemoryFormat::Value format : {MemoryFormat::CONTIGUOUS, MemoryFormat::CHANNELS_LAST}) {
    const FormatRun run = RunInFormat(TrainerConfig::BF16_AUTOCAST, format);
    ASSERT_EQ(run.losses.size(), 6u);
    EXPECT_GE(run.losses.front() - run.losses.back(), 0.7 * reference_fall)
        << MemoryFormat::Value_Name(format);
    EXPECT_NEAR(run.val_accuracy, reference.val_accuracy, 0.08) << MemoryFormat::Value_Name(format);
    // bf16 arithmetic does change the numbers: the setting took effect.
    EXPECT_NE(run.val_loss, reference.val_loss);
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

// small_cnn on a few synthetic images, under `optimizer`.
PipelineConfig SmallRunConfig(const std::string& optimizer, const std::string& output_dir) {
  PipelineConfig config;
  EXPECT_TRUE(ParseTextProto(absl::StrCat(R"pb(
                               model { name: "small_cnn" }
                               train_data {
                                 dataset {
                                   name: "synthetic"
                                   options {
                                     [type.googleapis.com/pipeline.SyntheticOptions] {
                                       num_samples: 16 height: 8 width: 8 channels: 1
                                     }
                                   }
                                 }
                               }
                               trainer { batch_size: 8 epochs: 1 }
                               )pb",
                                          optimizer),
                             "test", &config)
                  .ok());
  config.set_output_dir(output_dir);
  return config;
}

TEST(TrainEndToEndTest, ParamGroupsAreCheckedWithTheConfigAndListedInTheHeader) {
  const std::string dir = ::testing::TempDir() + "/param_groups";
  auto bad = ResolveConfig(SmallRunConfig(R"pb(optimizer {
                                                 param_groups {
                                                   norm_weight_decay: -1
                                                   lr_scales { pattern: "" lr_scale: 0 }
                                                   layer_decay: 2
                                                 }
                                               })pb",
                                          dir));
  ASSERT_FALSE(bad.ok());
  const std::string message(bad.status().message());
  EXPECT_THAT(message, HasSubstr("optimizer.param_groups.norm_weight_decay: -1; must be >= 0"));
  EXPECT_THAT(message, HasSubstr("optimizer.param_groups.lr_scales[0].pattern: empty"));
  EXPECT_THAT(message, HasSubstr("optimizer.param_groups.lr_scales[0].lr_scale: 0; must be > 0"));
  EXPECT_THAT(message, HasSubstr("optimizer.param_groups.layer_decay: 2; must be in (0, 1]"));

  auto resolved = ResolveConfig(SmallRunConfig(
      R"pb(optimizer {
             name: "lars"
             param_groups { norm_weight_decay: 0 lr_scales { pattern: "fc.*" lr_scale: 10 } }
           })pb",
      dir));
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  std::ostringstream log;
  auto summary = Train(*resolved, {.dry_run = true, .log = &log});
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_THAT(log.str(), HasSubstr("optimizer lars: param group 0: "));
  EXPECT_THAT(log.str(), HasSubstr(", lr x1, weight_decay the optimizer's\n"));
  EXPECT_THAT(log.str(), HasSubstr(", lr x1, weight_decay 0\n"));
  EXPECT_THAT(log.str(), HasSubstr("optimizer lars: param group 2: 2 tensors ("));

  // A pattern is checked against the built model's parameter names...
  auto unmatched = ResolveConfig(SmallRunConfig(
      R"pb(optimizer { param_groups { lr_scales { pattern: "head.*" lr_scale: 10 } } })pb", dir));
  ASSERT_TRUE(unmatched.ok()) << unmatched.status();
  auto failed = Train(*unmatched, {.dry_run = true, .log = &log});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(failed.status().message(),
              HasSubstr("optimizer.param_groups.lr_scales[0].pattern: \"head.*\" matches no "
                        "trainable parameter of the model"));
  // ...layer_decay with the config, against what the model plugin declares.
  auto no_depth = ResolveConfig(
      SmallRunConfig(R"pb(optimizer { param_groups { layer_decay: 0.75 } })pb", dir));
  ASSERT_FALSE(no_depth.ok());
  EXPECT_THAT(no_depth.status().message(),
              HasSubstr("optimizer.param_groups.layer_decay: 0.75; model \"small_cnn\" has no "
                        "depth order for layer-wise decay; the models that have one: convnext, "
                        "maxvit, swin, vit (or leave layer_decay out)"));
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
