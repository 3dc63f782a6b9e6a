// Runs the train binary as a user would and checks that each kind of bad
// input ends with one clear error line, exit status 2, and no crash.

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/image/image_codec.h"
#include "pipeline/testing/command.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

using Result = testing::CommandResult;

Result RunTrain(const std::string& arguments) {
  return testing::RunCommand("tools/train " + arguments);
}

std::string Dir(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name;
  fs::create_directories(path);
  return path;
}

std::string WriteConfig(const std::string& name, const std::string& text) {
  const std::string path = Dir("configs") + "/" + name;
  std::ofstream(path) << text;
  return path;
}

void WritePng(const std::string& path, uint8_t value) {
  Image image;
  image.height = image.width = 8;
  image.channels = 1;
  image.u8.assign(64, value);
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << EncodePng(image).value();
}

std::string ImageFolderConfig(const std::string& train_root, const std::string& validation_root) {
  return absl::StrCat(R"pb(
    model { name: "resnet" }
    train_data {
      dataset {
        name: "image_folder"
        options { [type.googleapis.com/pipeline.ImageFolderOptions] { root: ")pb",
                      train_root, R"pb(" } }
      }
    }
    validation_data {
      dataset {
        name: "image_folder"
        options { [type.googleapis.com/pipeline.ImageFolderOptions] { root: ")pb",
                      validation_root, R"pb(" } }
      }
    }
    trainer { batch_size: 2 epochs: 1 }
  )pb");
}

// Exactly one "error: " line, no stack trace.
void ExpectOneCleanError(const Result& result, const std::string& expected) {
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("error: " + expected)) << result.output;
  EXPECT_THAT(result.output, Not(HasSubstr("Exception raised from"))) << result.output;
  EXPECT_THAT(result.output, Not(HasSubstr("terminate called"))) << result.output;
}

TEST(TrainCliTest, DryRunOfTheDefaultConfigSucceeds) {
  Result result = RunTrain("--config=configs/single.textproto --dry_run");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("train: 60000 samples, 10 classes, sample 28x28x1"));
  EXPECT_THAT(result.output, HasSubstr("configs/single.textproto; a dry run; "
                                       "--print_config prints it resolved"));
  EXPECT_THAT(result.output, HasSubstr("dry run: the config is valid and every plugin was built"));
}

TEST(TrainCliTest, EveryShippedConfigResolves) {
  int configs = 0;
  for (const auto& entry : std::filesystem::directory_iterator("configs")) {
    if (entry.path().extension() != ".textproto") continue;
    ++configs;
    Result result = RunTrain("--config=" + entry.path().string() + " --print_config");
    EXPECT_EQ(result.exit_code, 0) << entry.path() << "\n" << result.output;
  }
  EXPECT_GE(configs, 6);
}

TEST(TrainCliTest, DryRunOfTheDataParallelConfigBuildsTwoReplicas) {
  Result result = RunTrain("--config=configs/dp.textproto --dry_run");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("strategy data_parallel, world size 1"));
  EXPECT_THAT(result.output, HasSubstr("dry run: the config is valid and every plugin was built"));
}

// The output folder records what made the run: one line per start, with the
// command line, the git revision and the library versions; a resumed run's
// plot continues the curves of the epochs before it.
TEST(TrainCliTest, OutputFolderRecordsEachStartAndResumedCurvesContinue) {
  const std::string out = Dir("run_info_out");
  fs::remove_all(out);
  const std::string config = WriteConfig("run_info.textproto", R"pb(
    model { name: "small_cnn" }
    train_data {
      dataset {
        name: "synthetic"
        options { [type.googleapis.com/pipeline.SyntheticOptions] {
          num_samples: 16 height: 8 width: 8 channels: 1 num_classes: 2 } }
      }
    }
    trainer { batch_size: 8 epochs: 1 }
  )pb");
  for (const std::string resume : {"", " --resume=auto --set=trainer.epochs=2"}) {
    Result result = RunTrain("--config=" + config + " --set=output_dir=" + out + resume);
    ASSERT_EQ(result.exit_code, 0) << result.output;
  }
  // The LibTorch the binary reports with --version is the one it records.
  const Result version = RunTrain("--version");
  ASSERT_EQ(version.exit_code, 0) << version.output;
  const std::smatch match = [&] {
    std::smatch m;
    std::regex_search(version.output, m, std::regex("libtorch ([0-9][0-9.a-z+]*)"));
    return m;
  }();
  ASSERT_FALSE(match.empty()) << version.output;
  const std::string libtorch = match[1];
  std::ifstream file(out + "/run_info.jsonl");
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 2u);
  for (const std::string& line : lines) {
    EXPECT_THAT(line, HasSubstr("\"git_revision\":")) << line;
    EXPECT_THAT(line, HasSubstr("\"libtorch\":\"" + libtorch + "\"")) << line;
    EXPECT_THAT(line, HasSubstr("\"libjpeg_turbo\":\"")) << line;
    EXPECT_THAT(line, HasSubstr("\"--set=output_dir=" + out + "\"")) << line;
  }
  EXPECT_THAT(lines[1], HasSubstr("\"--resume=auto\"")) << lines[1];
  std::ifstream svg_file(out + "/curves.svg");
  const std::string svg((std::istreambuf_iterator<char>(svg_file)),
                        std::istreambuf_iterator<char>());
  EXPECT_THAT(svg, HasSubstr("train loss, epoch 1:"));
  EXPECT_THAT(svg, HasSubstr("train loss, epoch 2:"));
}

// Every shipped Fashion-MNIST recipe is a valid config on the default data.
TEST(TrainCliTest, DryRunOfTheFashionMnistRecipes) {
  for (const char* config : {"configs/fashion_mnist_fast.textproto",
                             "configs/fashion_mnist_best.textproto"}) {
    Result result = RunTrain(absl::StrCat("--config=", config, " --dry_run"));
    EXPECT_EQ(result.exit_code, 0) << config << "\n" << result.output;
    EXPECT_THAT(result.output, HasSubstr("model resnet")) << config;
  }
}

// The shipped JPEG config, pointed at a real folder, builds every plugin with
// the options as resolved (defaults filled in).
TEST(TrainCliTest, DryRunOfTheCatsVsDogsConfigOnAnImageFolder) {
  const std::string root = Dir("cats_vs_dogs");
  for (const char* split : {"train", "validation"}) {
    WritePng(root + "/" + split + "/cat/0.png", 10);
    WritePng(root + "/" + split + "/dog/0.png", 200);
  }
  for (const char* config : {"configs/cats_vs_dogs.textproto"}) {
    Result result = RunTrain(absl::StrCat(
        "--config=", config, " --dry_run --set=trainer.batch_size=2 --set=train_data.batch_size=2",
        " --set=train_data.dataset.options.root=", root,
        "/train --set=validation_data.dataset.options.root=", root, "/validation"));
    EXPECT_EQ(result.exit_code, 0) << config << "\n" << result.output;
    EXPECT_THAT(result.output, HasSubstr("sample 224x224x3")) << config;
  }
}

// The shipped fine-tuning recipes for ConvNeXt and ViT: the param groups
// they ask for (no decay on norms and biases, layer-wise decay, ConvNeXt's
// head at 10x) in the start header of a dry run, and a real step on a tiny
// folder. Both start without the pretrained file (model.weights cleared);
// ViT with 2 of its 12 blocks, to keep the step small.
TEST(TrainCliTest, FineTuneRecipesFormLayerDecayGroupsAndTrain) {
  const std::string root = Dir("fine_tune");
  for (const char* split : {"train", "validation"}) {
    for (int i = 0; i < 2; ++i) {
      WritePng(absl::StrCat(root, "/", split, "/cat/", i, ".png"), 10 + i);
      WritePng(absl::StrCat(root, "/", split, "/dog/", i, ".png"), 200 + i);
    }
  }
  const std::string small = absl::StrCat(
      " --set=model.weights= --set=trainer.batch_size=2 --set=train_data.batch_size=2",
      " --set=trainer.epochs=1 --set=train_data.dataset.options.root=", root,
      "/train --set=validation_data.dataset.options.root=", root, "/validation");
  struct Recipe {
    std::string config;
    std::string smaller;
    std::vector<std::string> header;
  };
  const std::vector<Recipe> recipes = {
      {"configs/fine_tune_convnext.textproto",
       "",
       {"model convnext",
        // The stem (layer 0 of 20): 0.8^19; its conv's bias and its
        // LayerNorm2d's weight and bias without weight decay, as
        // torchvision's set_weight_decay (LayerNorm2d is a LayerNorm).
        "optimizer adamw: param group 1: 3 tensors (288 values), lr x0.0144115, weight_decay 0\n",
        ", lr x0.0144115, weight_decay the optimizer's\n",
        ", lr x0.0144115, weight_decay 0\n",
        // The head: layer 19 at 10x.
        ", lr x10, weight_decay the optimizer's\n", ", lr x10, weight_decay 0\n"}},
      {"configs/fine_tune_vit.textproto",
       " --set=model.options.num_layers=2",
       {"model vit",
        // Patch embedding, class token and position embedding: layer 0 of
        // 4 (2 blocks), 0.75^3.
        ", lr x0.421875, weight_decay the optimizer's\n", ", lr x0.421875, weight_decay 0\n",
        ", lr x1, weight_decay the optimizer's\n", ", lr x1, weight_decay 0\n"}},
  };
  for (const Recipe& recipe : recipes) {
    const std::string out = Dir("fine_tune_run_" + fs::path(recipe.config).stem().string());
    const std::string arguments =
        absl::StrCat("--config=", recipe.config, small, recipe.smaller, " --set=output_dir=", out);
    Result dry = RunTrain(arguments + " --dry_run");
    ASSERT_EQ(dry.exit_code, 0) << recipe.config << "\n" << dry.output;
    for (const std::string& expected : recipe.header) {
      EXPECT_THAT(dry.output, HasSubstr(expected)) << recipe.config;
    }
    Result run = RunTrain(arguments);
    ASSERT_EQ(run.exit_code, 0) << recipe.config << "\n" << run.output;
    EXPECT_TRUE(fs::exists(out + "/checkpoint_epoch_1.pt")) << recipe.config << "\n" << run.output;
  }
}

TEST(TrainCliTest, ListPluginsShowsEveryKindWithOptions) {
  Result result = RunTrain("--list_plugins");
  EXPECT_EQ(result.exit_code, 0);
  for (const char* expected :
       {"models:", "  resnet — ", "[type.googleapis.com/pipeline.ResNetOptions]", "    depth: 18",
        "datasets:", "  image_folder — ", "samplers:", "  random — ", "transforms:",
        "  random_resized_crop — ", "strategys:", "  single — ", "optimizers:", "  adamw — ",
        "schedules:", "  cosine — "}) {
    EXPECT_THAT(result.output, HasSubstr(expected));
  }
}

TEST(TrainCliTest, PrintConfigAppliesSetOverridesInsidePluginOptions) {
  Result result = RunTrain(
      "--config=configs/single.textproto --print_config --set=model.options.depth=34 "
      "--set trainer.epochs=7");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("depth: 34"));
  EXPECT_THAT(result.output, HasSubstr("epochs: 7"));
}

TEST(TrainCliTest, MalformedTextprotoNamesFileLineAndColumn) {
  const std::string path = WriteConfig("malformed.textproto", "trainer {\n  epochs: 3\n");
  ExpectOneCleanError(RunTrain("--config=" + path), path + ":3:1: Expected identifier, got: ");
}

TEST(TrainCliTest, UnknownFieldIsNamedWithItsPosition) {
  const std::string path = WriteConfig("unknown_field.textproto", "trainer { epoks: 3 }\n");
  ExpectOneCleanError(RunTrain("--config=" + path),
                      path + ":1:16: Message type \"pipeline.TrainerConfig\" has no field named "
                             "\"epoks\".");
}

// Options of another plugin of the kind (ddp's sync_batch_norm and
// shard_optimizer_state) under data_parallel or single say whose they are.
TEST(TrainCliTest, AnotherStrategysOptionNamesTheStrategyThatHasIt) {
  ExpectOneCleanError(
      RunTrain("--config=configs/single.textproto --dry_run --set='strategy={name: \"single\" "
               "options { [type.googleapis.com/pipeline.SingleDeviceOptions] { "
               "shard_optimizer_state: true } }}'"),
      "--set strategy:1:111: Message type \"pipeline.SingleDeviceOptions\" has no field named "
      "\"shard_optimizer_state\". Its fields: device. shard_optimizer_state is an option of "
      "strategy \"ddp\".");
  ExpectOneCleanError(
      RunTrain("--config=configs/dp.textproto --dry_run --set='strategy={name: "
               "\"data_parallel\" options { [type.googleapis.com/pipeline.DataParallelOptions] { "
               "sync_batch_norm: true } }}'"),
      "--set strategy:1:112: Message type \"pipeline.DataParallelOptions\" has no field named "
      "\"sync_batch_norm\". Its fields: replicas, device. sync_batch_norm is an option of "
      "strategy \"ddp\".");
}

TEST(TrainCliTest, UnknownPluginListsChoicesAndClosestMatch) {
  const std::string path = WriteConfig(
      "unknown_plugin.textproto",
      "model { name: \"resnt\" } train_data { dataset { name: \"fashion_mnist\" } }\n");
  Result result = RunTrain("--config=" + path);
  ExpectOneCleanError(result, path + " is not a valid config:\nmodel.name: \"resnt\" is not a "
                                     "registered model; registered: ");
  EXPECT_THAT(result.output, HasSubstr(", resnet, "));
  EXPECT_THAT(result.output, HasSubstr(". Did you mean \"resnet\"?"));
}

TEST(TrainCliTest, UnknownMetricAndLossListChoicesAndClosestMatch) {
  const std::string path = WriteConfig(
      "unknown_metric.textproto",
      "model { name: \"small_cnn\" } train_data { dataset { name: \"fashion_mnist\" } }\n"
      "loss { name: \"cross_entropi\" }\nmetrics { name: \"acuracy\" }\n");
  Result result = RunTrain("--config=" + path);
  ExpectOneCleanError(result, path + " is not a valid config:\n");
  EXPECT_THAT(result.output, HasSubstr("loss.name: \"cross_entropi\" is not a registered loss; "
                                       "registered: cross_entropy, soft_target_cross_entropy. "
                                       "Did you mean \"cross_entropy\"?"));
  EXPECT_THAT(result.output, HasSubstr("metrics[0].name: \"acuracy\" is not a registered metric; "
                                       "registered: accuracy, confusion_matrix. Did you mean "
                                       "\"accuracy\"?"));
}

TEST(TrainCliTest, ATopKBeyondTheClassesIsAConfigError) {
  // Two classes of synthetic data, and top-5 accuracy asked for.
  const std::string path = WriteConfig("top5.textproto", R"pb(
    model { name: "small_cnn" }
    train_data {
      dataset {
        name: "synthetic"
        options { [type.googleapis.com/pipeline.SyntheticOptions] { num_classes: 2 num_samples: 8 } }
      }
    }
    metrics { name: "accuracy" }
    metrics { name: "accuracy" options { [type.googleapis.com/pipeline.AccuracyOptions] { top_k: 5 } } }
  )pb");
  ExpectOneCleanError(RunTrain("--config=" + path + " --dry_run"),
                      "metrics[1]: metric \"accuracy\": options.top_k: 5, but the training data "
                      "has 2 classes");
}

TEST(TrainCliTest, AMovedFieldNamesItsNewPlace) {
  const std::vector<std::pair<std::string, std::string>> moved = {
      {"label_smoothing: 0.1",
       "trainer.label_smoothing: moved to the loss; write loss { name: \"cross_entropy\" "
       "options { label_smoothing: 0.1 } } instead"},
      {"channels_last: true",
       "trainer.channels_last: moved; write trainer { memory_format: CHANNELS_LAST } instead "
       "(or memory_format: AUTO, channels-last where it runs faster)"},
  };
  for (const auto& [field, error] : moved) {
    const std::string path = WriteConfig(
        "moved.textproto",
        "model { name: \"small_cnn\" } train_data { dataset { name: \"fashion_mnist\" } }\n"
        "trainer { " + field + " }\n");
    ExpectOneCleanError(RunTrain("--config=" + path), path + " is not a valid config:\n" + error);
  }
}

// oneDNN capped below its bf16 kernels (ONEDNN_MAX_CPU_ISA=AVX2) makes any
// CPU one without native bf16 for the runner: bf16 convolutions run through
// slow fallbacks, or (where LibTorch still takes the CPU for bf16-capable)
// have no kernel at all. The verdicts below hold on every machine.
constexpr char kWithoutNativeBf16[] = "ONEDNN_MAX_CPU_ISA=AVX2 ";

// One step of small_cnn on 32x32 images: quick even where bf16 is emulated.
std::string TinyRunConfig(const std::string& name, const std::string& out) {
  return WriteConfig(name, absl::StrCat(R"pb(
    model { name: "small_cnn" }
    train_data {
      dataset {
        name: "synthetic"
        options {
          [type.googleapis.com/pipeline.SyntheticOptions] { num_samples: 8 height: 32 width: 32 }
        }
      }
    }
    trainer { batch_size: 4 max_steps: 1 }
    output_dir: ")pb", out, R"pb(")pb"));
}

TEST(TrainCliTest, Bf16OnACpuWithoutItIsRefusedWithTheMeasuredSlowdown) {
  const std::string config = TinyRunConfig("bf16_refused.textproto", Dir("bf16_refused"));
  for (const char* mode : {"", " --dry_run"}) {
    Result result = testing::RunCommand(absl::StrCat(
        kWithoutNativeBf16, "tools/train --config=", config,
        " --set=trainer.precision=BF16_AUTOCAST", mode));
    ExpectOneCleanError(result, "trainer.precision: BF16_AUTOCAST, but this CPU ");
    // Where ATen takes the CPU for bf16-capable but oneDNN is capped below
    // its bf16 kernels, bf16 convolutions have no kernel at all; elsewhere
    // they run through slow fallbacks. Either is measured and named.
    EXPECT_TRUE(std::regex_search(
        result.output,
        std::regex(": bf16 would run emulated, and a start-up probe \\(one small convolution "
                   "step, forward and backward\\) ran [0-9]+x slower in bf16 than in float32|"
                   ", and a start-up probe \\(one small convolution step, forward and "
                   "backward\\) could not run in bf16 at all \\(bf16: ")))
        << result.output;
    EXPECT_THAT(result.output, HasSubstr("Use precision: AUTO (float32 here, bf16 where the CPU "
                                         "has it) or FP32"));
    EXPECT_FALSE(fs::exists(Dir("bf16_refused") + "/config.textproto")) << mode;
  }
}

TEST(TrainCliTest, AllowEmulatedBf16RunsItAndTheHeaderSaysSo) {
  const std::string config = TinyRunConfig("bf16_allowed.textproto", Dir("bf16_allowed"));
  Result result = testing::RunCommand(absl::StrCat(
      kWithoutNativeBf16, "tools/train --config=", config,
      " --set=trainer.precision=BF16_AUTOCAST --set=trainer.allow_emulated_bf16=true"));
  if (result.output.find("could not run in bf16 at all") != std::string::npos) {
    // No bf16 kernel at all (see above): allowing emulation cannot help.
    ExpectOneCleanError(result, "trainer.precision: BF16_AUTOCAST, but this CPU ");
    return;
  }
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("compute: BF16_AUTOCAST, channels-last on CPU "));
  EXPECT_THAT(result.output, HasSubstr("bf16 is emulated on this CPU"));
}

// AUTO is recorded in the header and in run_info.jsonl with its reason.
TEST(TrainCliTest, PrecisionAutoIsDecidedForTheCpuAndRecorded) {
  const std::string out = Dir("auto_out");
  const std::string config = TinyRunConfig("auto.textproto", out);
  Result result = testing::RunCommand(absl::StrCat(
      kWithoutNativeBf16, "tools/train --config=", config, " --set=trainer.precision=AUTO"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("compute: FP32, contiguous on CPU "));
  EXPECT_THAT(result.output, HasSubstr("precision: AUTO chose FP32: the CPU does not compute "
                                       "bf16 natively ("));
  EXPECT_THAT(result.output, HasSubstr("memory_format: AUTO chose CONTIGUOUS"));
  std::ifstream run_info(out + "/run_info.jsonl");
  std::stringstream text;
  text << run_info.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("\"compute\":{\"precision\":\"FP32\",\"memory_format\":"
                                    "\"CONTIGUOUS\",\"cudnn_benchmark\":\"false\",\"device\":"
                                    "\"CPU "));
  // The saved config keeps AUTO: a resumed run decides again.
  std::ifstream saved(out + "/config.textproto");
  std::stringstream saved_text;
  saved_text << saved.rdbuf();
  EXPECT_THAT(saved_text.str(), HasSubstr("precision: AUTO"));
}

TEST(TrainCliTest, ABestMetricThatIsNoValidationValueIsRefused) {
  ExpectOneCleanError(
      RunTrain("--config=configs/single.textproto --dry_run --set=checkpoint.best_metric=val_f1"),
      "checkpoint.best_metric: \"val_f1\" is not a validation figure of this run; choose one "
      "of: val_loss, val_acc");
}

TEST(TrainCliTest, AnEmaFigureWithoutEmaIsRefusedAndWithItAccepted) {
  ExpectOneCleanError(
      RunTrain("--config=configs/single.textproto --dry_run "
               "--set=checkpoint.best_metric=val_acc_ema"),
      "checkpoint.best_metric: \"val_acc_ema\" is not a validation figure of this run; choose "
      "one of: val_loss, val_acc");
  const Result with_ema =
      RunTrain("--config=configs/single.textproto --dry_run "
               "--set=checkpoint.best_metric=val_acc_ema --set=trainer.ema.decay=0.999");
  EXPECT_EQ(with_ema.exit_code, 0) << with_ema.output;
}

TEST(TrainCliTest, OutOfRangeRecipeOptionsNameTheFieldAndTheRange) {
  // Checked with the rest of the config, each a line under the file's name.
  ExpectOneCleanError(
      RunTrain("--config=configs/single.textproto --dry_run --set=trainer.ema.decay=1"),
      "./configs/single.textproto is not a valid config:\n"
      "trainer.ema.decay: 1; must be in [0, 1) (0 = off; typical 0.9998)");
  ExpectOneCleanError(
      RunTrain("--config=configs/single.textproto --dry_run --set=trainer.clip_grad.max_norm=-1"),
      "./configs/single.textproto is not a valid config:\n"
      "trainer.clip_grad.max_norm: -1; must be >= 0 (0 = off)");
  ExpectOneCleanError(
      RunTrain("--config=configs/single.textproto --dry_run "
               "--set='trainer.early_stopping={patience: 3 metric: \"val_f1\"}'"),
      "trainer.early_stopping.metric: \"val_f1\" is not a validation figure of this run; "
      "choose one of: val_loss, val_acc");
}

TEST(TrainCliTest, APlateauScheduleOnAFigureTheRunLacksIsRefused) {
  ExpectOneCleanError(
      RunTrain("--config=configs/single.textproto --dry_run --set='learning_rate.schedule={name: "
               "\"plateau\" options { [type.googleapis.com/pipeline.PlateauScheduleOptions] { "
               "metric: \"val_acc_top5\" } }}'"),
      "learning_rate.schedule \"plateau\" options.metric: \"val_acc_top5\" is not a validation "
      "figure of this run; choose one of: val_loss, val_acc");
}

TEST(TrainCliTest, MixingValidationDataIsRefused) {
  ExpectOneCleanError(
      RunTrain("--config=configs/single.textproto --dry_run "
               "--set='validation_data.batch_transforms={name: \"mixup\"}'"),
      "./configs/single.textproto is not a valid config:\n"
      "validation_data.batch_transforms: \"mixup\" on validation data; validation is never "
      "mixed: move it to train_data.batch_transforms");
}

TEST(TrainCliTest, MixupOnTheDefaultDataPassesADryRun) {
  const Result result =
      RunTrain("--config=configs/single.textproto --dry_run "
               "--set='train_data.batch_transforms={name: \"cutmix\"}'");
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

TEST(TrainCliTest, NonNumericSetValue) {
  ExpectOneCleanError(RunTrain("--config=configs/single.textproto --set=trainer.epochs=many"),
                      "--set trainer.epochs=many: \"many\" is not a value of type int32 for "
                      "trainer.epochs");
}

TEST(TrainCliTest, MissingDataFolder) {
  const std::string path = WriteConfig(
      "missing_folder.textproto", ImageFolderConfig("/no/such/data/train", "/no/such/val"));
  Result result = RunTrain("--config=" + path + " --dry_run");
  ExpectOneCleanError(result, "train_data.dataset: dataset \"image_folder\": root: folder "
                              "/no/such/data/train does not exist");
}

TEST(TrainCliTest, EmptyClassFolder) {
  const std::string root = Dir("empty_class");
  WritePng(root + "/train/cat/0.png", 10);
  fs::create_directories(root + "/train/dog");
  Result result = RunTrain(
      "--config=" + WriteConfig("empty_class.textproto",
                                ImageFolderConfig(root + "/train", root + "/train")) +
      " --dry_run");
  ExpectOneCleanError(result, "train_data.dataset: dataset \"image_folder\": ");
  EXPECT_THAT(result.output, HasSubstr("dog"));
}

TEST(TrainCliTest, ClassInValidationButNotInTrain) {
  const std::string root = Dir("extra_class");
  WritePng(root + "/train/cat/0.png", 10);
  WritePng(root + "/train/dog/0.png", 200);
  WritePng(root + "/validation/cat/0.png", 10);
  WritePng(root + "/validation/bird/0.png", 100);
  Result result = RunTrain(
      "--config=" + WriteConfig("extra_class.textproto",
                                ImageFolderConfig(root + "/train", root + "/validation")) +
      " --dry_run");
  ExpectOneCleanError(result, "validation_data.dataset: class \"bird\" is in the validation data "
                              "but not in the training data (training classes: cat, dog)");
}

TEST(TrainCliTest, CorruptImageIsNamedWhenTrainingReachesIt) {
  const std::string root = Dir("corrupt");
  WritePng(root + "/train/cat/0.png", 10);
  WritePng(root + "/train/dog/0.png", 200);
  // A PNG cut in half.
  std::ifstream good(root + "/train/dog/0.png", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(good)), std::istreambuf_iterator<char>());
  std::ofstream(root + "/train/dog/1.png", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  Result result = RunTrain(
      "--config=" + WriteConfig("corrupt.textproto",
                                ImageFolderConfig(root + "/train", root + "/train")) +
      " --set=output_dir=" + Dir("corrupt_out") + " --set=trainer.batch_size=3");
  ExpectOneCleanError(result, "sample ");
  EXPECT_THAT(result.output, HasSubstr(root + "/train/dog/1.png"));
}

TEST(TrainCliTest, UnreadableIdxFile) {
  const std::string root = Dir("bad_idx");
  std::ofstream(root + "/train-images-idx3-ubyte.gz") << "not gzip, not idx";
  std::ofstream(root + "/train-labels-idx1-ubyte.gz") << "not gzip, not idx";
  const std::string path = WriteConfig(
      "bad_idx.textproto",
      absl::StrCat("model { name: \"resnet\" } train_data { dataset { name: \"fashion_mnist\" "
                   "options { [type.googleapis.com/pipeline.FashionMnistOptions] { root: \"",
                   root, "\" } } } }\n"));
  ExpectOneCleanError(RunTrain("--config=" + path + " --dry_run"),
                      "train_data.dataset: dataset \"fashion_mnist\": " + root +
                          "/train-images-idx3-ubyte.gz: not an idx images file");
}

// A dry run of a multi-process config validates what the run would: the
// launcher starts the workers, they form the process group and check the
// data, and nothing trains.
TEST(TrainCliTest, DryRunOfTheDdpConfigLaunchesItsWorkers) {
  Result result = RunTrain("--config=configs/ddp.textproto --dry_run");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("launcher: started 2 workers (ranks 0-1 of 2)"));
  EXPECT_THAT(result.output, HasSubstr("strategy ddp, world size 2"));
  EXPECT_THAT(result.output, HasSubstr("dry run: the config is valid and every plugin was built"));
  EXPECT_THAT(result.output, Not(HasSubstr("\"event\":\"summary\"")));
}

// The start says where the resolved config is, in one line; the ~100 lines
// of it are in output_dir and behind --print_config.
TEST(TrainCliTest, AStartPrintsAShortHeaderAndSavesTheResolvedConfig) {
  const std::string out = Dir("header_out");
  const std::string config = TinyRunConfig("header.textproto", out);
  Result result = RunTrain("--config=" + config);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr(absl::StrCat("config ", config, "; the resolved config "
                                     "(every default filled in) is saved as ",
                                     out, "/config.textproto; --print_config prints it")));
  EXPECT_THAT(result.output, HasSubstr("strategy single, world size 1"));
  // Not the config itself.
  EXPECT_THAT(result.output, Not(HasSubstr("trainer {")));
  std::ifstream saved(out + "/config.textproto");
  std::stringstream text;
  text << saved.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("trainer {"));
}

// `bazel-bin/tools/train --config=single` from the repository, from one of
// its folders, or from anywhere: a bare name is a config of configs/.
TEST(TrainCliTest, ABareConfigNameWorksForTheBuiltBinary) {
  const std::string train = fs::absolute("tools/train").string();
  // The binary's own configs (its runfiles), from a folder with none.
  const std::string elsewhere = Dir("elsewhere");
  Result result = testing::RunCommand("cd " + elsewhere + " && " + train +
                                      " --config=single --print_config");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("name: \"single\""));
  // A workspace's configs/, from a folder inside it.
  const std::string workspace = Dir("a_workspace");
  std::ofstream(workspace + "/WORKSPACE") << "";
  fs::create_directories(workspace + "/configs");
  fs::create_directories(workspace + "/tools");
  fs::copy_file("configs/single.textproto", workspace + "/configs/mine.textproto",
                fs::copy_options::overwrite_existing);
  result = testing::RunCommand("cd " + workspace + "/tools && " + train +
                               " --config=mine --print_config");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  // A name that is not there lists what configs/ holds.
  result = testing::RunCommand("cd " + workspace + " && " + train + " --config=theirs");
  ExpectOneCleanError(result, "--config=theirs: no such file");
  EXPECT_THAT(result.output, HasSubstr("; configs/ holds: mine.textproto")) << result.output;
}

TEST(TrainCliTest, MissingConfigListsTheConfigsFolder) {
  Result result = RunTrain("--config=/no/such/config.textproto");
  ExpectOneCleanError(result, "--config=/no/such/config.textproto: no such file");
}

}  // namespace
}  // namespace pipeline
