#include "pipeline/trainer/log_hooks.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "pipeline/testing/hook_test_util.h"
#include "pipeline/trainer/grad_scaler.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::HookTestRun;
using testing::Lines;
using testing::ParseConfig;
using testing::ReadFileText;

const Figure kLoss{"loss", 0.5, true, false};
const Figure kAcc{"acc", 0.75, true, true};

google::protobuf::Struct ParseJson(const std::string& line) {
  google::protobuf::Struct event;
  const auto status = google::protobuf::util::JsonStringToMessage(line, &event);
  EXPECT_TRUE(status.ok()) << status.ToString() << " in " << line;
  return event;
}

// The keys of a JSON object line, in the order written.
std::vector<std::string> KeysInOrder(const std::string& line) {
  const google::protobuf::Struct event = ParseJson(line);
  std::vector<std::pair<size_t, std::string>> found;
  for (const auto& [key, value] : event.fields()) {
    found.emplace_back(line.find("\"" + key + "\":"), key);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> keys;
  for (const auto& [position, key] : found) keys.push_back(key);
  return keys;
}

// An epoch of training figures and, when validated, validation ones.
EpochReport Epoch(int64_t epoch, double train_loss, double train_acc, bool validated,
                  double val_loss = 0, double val_acc = 0) {
  EpochReport report;
  report.epoch = epoch;
  report.seconds = 65;
  report.images = 650;
  report.validated = validated;
  report.validation_samples = validated ? 10 : 0;
  report.figures = {{"train_loss", train_loss, true, false},
                    {"train_acc", train_acc, true, true},
                    {"train_max_logit", 3.0, false, false},
                    {"val_loss", val_loss, true, false},
                    {"val_acc", val_acc, true, true}};
  return report;
}

TEST(FormatFigureTest, PercentForBetterHigherFourDecimalsOtherwise) {
  EXPECT_EQ(FormatFigure(kAcc), "75.00%");
  EXPECT_EQ(FormatFigure(kLoss), "0.5000");
  EXPECT_EQ(FormatFigure({"acc_top5", 0.123456, true, true}), "12.35%");
}

TEST(FiguresTextTest, OnlyEpochLineFiguresWithThePrefix) {
  const std::vector<Figure> figures = {kLoss, kAcc, {"class_acc/cat", 0.5, false, true}};
  EXPECT_EQ(FiguresText(figures), "loss 0.5000 acc 75.00%");
  EXPECT_EQ(FiguresText(figures, "val_"), "val_loss 0.5000 val_acc 75.00%");
  EXPECT_EQ(FiguresText({}), "");
}

TEST(ProgressHookTest, StepLineOnLoggingStepsOnly) {
  HookTestRun run(ParseConfig(""));
  ProgressHook hook;
  run.position().step = run.position().epoch_step = 1;
  HOOK_TEST_ASSERT_OK(hook.OnStepEnd(run.context(), StepReport{}));
  EXPECT_EQ(run.log(), "");
  StepReport step;
  step.window = {kLoss, kAcc};
  step.images_per_sec = 12.34;
  step.eta_seconds = 125;
  run.position().step = run.position().epoch_step = 2;
  run.position().learning_rate = 0.05;
  HOOK_TEST_ASSERT_OK(hook.OnStepEnd(run.context(), step));
  EXPECT_EQ(run.log(), "epoch 1/2 step 2/4 loss 0.5000 acc 75.00% 12.3 img/s lr 0.05 eta 2m05s\n");
}

TEST(ProgressHookTest, EpochLineWithValidation) {
  HookTestRun run(ParseConfig(""));
  ProgressHook hook;
  EpochReport epoch = Epoch(1, 0.5, 0.75, /*validated=*/true, 0.25, 0.8);
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), epoch));
  EXPECT_EQ(run.log(),
            "epoch 1/2 done in 1m05s: loss 0.5000 acc 75.00% val_loss 0.2500 val_acc 80.00% "
            "(10 samples), 10.0 img/s\n");
}

TEST(ProgressHookTest, EpochLineWithoutValidationLeavesTheCarriedFiguresOut) {
  HookTestRun run(ParseConfig(""));
  ProgressHook hook;
  EpochReport epoch = Epoch(2, 0.125, 0.5, /*validated=*/false, 0.25, 0.8);
  epoch.seconds = 3725;
  epoch.images = 7450;
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), epoch));
  EXPECT_EQ(run.log(), "epoch 2/2 done in 1h02m: loss 0.1250 acc 50.00%, 2.0 img/s\n");
}

TEST(ProgressHookTest, RunEndCountsSkippedSteps) {
  HookTestRun run(ParseConfig(""));
  ProgressHook hook;
  TrainSummary summary;
  summary.steps = 8;
  HOOK_TEST_ASSERT_OK(hook.OnRunEnd(run.context(), summary));
  EXPECT_EQ(run.log(), "");
  summary.skipped_steps = 2;
  HOOK_TEST_ASSERT_OK(hook.OnRunEnd(run.context(), summary));
  EXPECT_EQ(run.log(),
            "train: 2 of 8 optimizer steps skipped for non-finite values "
            "(trainer.on_nonfinite: SKIP_STEP)\n");
}

TEST(ProgressHookTest, RunEndUnderLossScalingNamesTheScaleToo) {
  HookTestRun run(ParseConfig(""));
  run.UseScaler(GradScalerConfig{});  // the run scales its loss
  ProgressHook hook;
  TrainSummary summary;
  summary.steps = 10;
  summary.skipped_steps = 1;
  HOOK_TEST_ASSERT_OK(hook.OnRunEnd(run.context(), summary));
  EXPECT_EQ(run.log(),
            "train: 1 of 10 optimizer steps skipped for non-finite values (loss scale too "
            "large for them, or trainer.on_nonfinite: SKIP_STEP)\n");
}

TEST(JsonEventsHookTest, EpochLineKeysInOrderToEventsAndMetricsFile) {
  HookTestRun run(ParseConfig(""));
  auto hook = JsonEventsHook::Create(run.dir().string());
  ASSERT_TRUE(hook.ok()) << hook.status();
  run.position().step = 4;
  run.position().learning_rate = 0.025;
  EpochReport epoch = Epoch(1, 0.5, 0.75, /*validated=*/true, 0.25, 0.8);
  epoch.seconds = 1.5;
  HOOK_TEST_ASSERT_OK((*hook)->OnEpochEnd(run.context(), epoch));
  const std::vector<std::string> lines = Lines(run.events());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(KeysInOrder(lines[0]),
              ElementsAre("event", "epoch", "step", "train_loss", "train_acc", "train_max_logit",
                          "val_loss", "val_acc", "validated", "lr", "seconds"));
  const google::protobuf::Struct event = ParseJson(lines[0]);
  EXPECT_EQ(event.fields().at("event").string_value(), "epoch");
  EXPECT_EQ(event.fields().at("epoch").number_value(), 1);
  EXPECT_EQ(event.fields().at("step").number_value(), 4);
  EXPECT_EQ(event.fields().at("train_acc").number_value(), 0.75);
  EXPECT_EQ(event.fields().at("val_loss").number_value(), 0.25);
  EXPECT_TRUE(event.fields().at("validated").bool_value());
  EXPECT_EQ(event.fields().at("lr").number_value(), 0.025);
  EXPECT_EQ(event.fields().at("seconds").number_value(), 1.5);
  EXPECT_EQ(ReadFileText(run.dir() / "metrics.jsonl"), run.events());
}

TEST(JsonEventsHookTest, NonFiniteFigureIsNull) {
  HookTestRun run(ParseConfig(""));
  auto hook = JsonEventsHook::Create(run.dir().string());
  ASSERT_TRUE(hook.ok()) << hook.status();
  EpochReport epoch =
      Epoch(1, std::numeric_limits<double>::quiet_NaN(), 0.5, /*validated=*/false);
  epoch.figures[3].value = std::numeric_limits<double>::infinity();
  HOOK_TEST_ASSERT_OK((*hook)->OnEpochEnd(run.context(), epoch));
  const std::string line = Lines(run.events()).at(0);
  EXPECT_THAT(line, HasSubstr("\"train_loss\":null"));
  EXPECT_THAT(line, HasSubstr("\"val_loss\":null"));
  const google::protobuf::Struct event = ParseJson(line);
  EXPECT_EQ(event.fields().at("train_loss").kind_case(), google::protobuf::Value::kNullValue);
  EXPECT_FALSE(event.fields().at("validated").bool_value());
}

TEST(JsonEventsHookTest, SummaryLine) {
  HookTestRun run(ParseConfig(""));
  auto hook = JsonEventsHook::Create(run.dir().string());
  ASSERT_TRUE(hook.ok()) << hook.status();
  TrainSummary summary;
  summary.images_per_sec = 123.5;
  summary.figures = {{"train_loss", 0.5}, {"val_acc", 0.75}};
  summary.epochs = 2;
  summary.steps = 8;
  summary.wall_seconds = 3;
  summary.skipped_steps = 1;
  summary.skipped_samples = 4;
  HOOK_TEST_ASSERT_OK((*hook)->OnRunEnd(run.context(), summary));
  const std::string line = Lines(run.events()).at(0);
  EXPECT_THAT(KeysInOrder(line),
              ElementsAre("event", "images_per_sec", "train_loss", "val_acc", "epochs", "steps",
                          "wall_s", "skipped_steps", "skipped_samples"));
  const google::protobuf::Struct event = ParseJson(line);
  EXPECT_EQ(event.fields().at("event").string_value(), "summary");
  EXPECT_EQ(event.fields().at("val_acc").number_value(), 0.75);
  EXPECT_EQ(event.fields().at("skipped_samples").number_value(), 4);
}

TEST(JsonEventsHookTest, MetricsFileIsAppendedAcrossStarts) {
  HookTestRun run(ParseConfig(""));
  for (int64_t e = 1; e <= 2; ++e) {
    auto hook = JsonEventsHook::Create(run.dir().string());
    ASSERT_TRUE(hook.ok()) << hook.status();
    EpochReport epoch = Epoch(e, 1.0 / e, 0.5, /*validated=*/true);
    HOOK_TEST_ASSERT_OK((*hook)->OnEpochEnd(run.context(), epoch));
  }
  const std::vector<std::string> lines = Lines(ReadFileText(run.dir() / "metrics.jsonl"));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(ParseJson(lines[0]).fields().at("epoch").number_value(), 1);
  EXPECT_EQ(ParseJson(lines[1]).fields().at("epoch").number_value(), 2);
}

// After a torn last line (a full disk under on_write_error: CONTINUE, a
// killed run) the next start's first line must not be glued onto the
// fragment: a JSON-lines reader would drop it too, and EpochPointsOf (the
// curves of the next resume) would lose that epoch.
TEST(JsonEventsHookTest, AStartAfterATornLastLineBeginsANewLine) {
  HookTestRun run(ParseConfig(""));
  const fs::path path = run.dir() / "metrics.jsonl";
  std::ofstream(path) << "{\"event\":\"epoch\",\"epoch\":1,\"train_loss\":0.9,"
                         "\"train_acc\":0.1,\"validated\":false}\n"
                      << "{\"event\":\"epoch\",\"epoch\":2,\"train_lo";  // the disk filled up
  auto hook = JsonEventsHook::Create(run.dir().string());
  ASSERT_TRUE(hook.ok()) << hook.status();
  EpochReport epoch = Epoch(2, 0.5, 0.5, /*validated=*/false);
  HOOK_TEST_ASSERT_OK((*hook)->OnEpochEnd(run.context(), epoch));
  const std::string written = Lines(run.events()).at(0);
  EXPECT_EQ(Lines(ReadFileText(path)).back(), written);
  const std::vector<EpochPoint> points = EpochPointsOf(path.string(), 2);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1].train_loss, 0.5);
}

TEST(JsonEventsHookTest, AnOutputDirThatCannotBeWrittenIsAnError) {
  HookTestRun run(ParseConfig(""));
  const auto hook = JsonEventsHook::Create((run.dir() / "no" / "such" / "folder").string());
  ASSERT_FALSE(hook.ok());
  EXPECT_THAT(std::string(hook.status().message()), HasSubstr("metrics.jsonl"));
}

TEST(JsonEventsHookTest, WithoutAnEventsStreamOnlyTheFile) {
  HookTestRun run(ParseConfig(""));
  run.context().events = nullptr;
  auto hook = JsonEventsHook::Create(run.dir().string());
  ASSERT_TRUE(hook.ok()) << hook.status();
  EpochReport epoch = Epoch(1, 0.5, 0.5, false);
  HOOK_TEST_ASSERT_OK((*hook)->OnEpochEnd(run.context(), epoch));
  EXPECT_EQ(run.events(), "");
  EXPECT_EQ(Lines(ReadFileText(run.dir() / "metrics.jsonl")).size(), 1u);
}

TEST(EpochPointsOfTest, SkipsTornLinesAndKeepsTheLastLineOfAnEpoch) {
  HookTestRun run(ParseConfig(""));
  const fs::path path = run.dir() / "metrics.jsonl";
  std::ofstream(path)
      << "{\"event\":\"epoch\",\"epoch\":1,\"step\":4,\"train_loss\":0.9,\"train_acc\":0.1,"
         "\"val_loss\":0.8,\"val_acc\":0.2,\"validated\":true}\n"
      << "{\"event\":\"epoch\",\"epoch\":2,\"step\":8,\"train_loss\":0.7,\"train_acc\":0.3,"
         "\"val_loss\":0.8,\"val_acc\":0.2,\"validated\":false}\n"
      << "{\"event\":\"epoch\",\"epoch\":3,\"step\":12,\"train_lo\n"  // torn: the run died
      << "{\"event\":\"bad_samples\",\"epoch\":2,\"train_skipped\":1}\n"
      << "not json at all\n"
      // The second start trained epoch 2 again; its line counts.
      << "{\"event\":\"epoch\",\"epoch\":2,\"step\":8,\"train_loss\":0.6,\"train_acc\":0.4,"
         "\"val_loss\":0.5,\"val_acc\":0.45,\"validated\":true}\n"
      << "{\"event\":\"epoch\",\"epoch\":3,\"step\":12,\"train_loss\":0.5,\"train_acc\":0.5,"
         "\"val_loss\":null,\"val_acc\":0.5,\"validated\":false}\n"
      << "{\"event\":\"summary\",\"epochs\":3}\n";
  const std::vector<EpochPoint> points = EpochPointsOf(path.string(), 2);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].epoch, 1);
  EXPECT_EQ(points[0].train_loss, 0.9);
  EXPECT_EQ(points[0].train_accuracy, 0.1);
  EXPECT_EQ(points[0].val_loss, 0.8);
  EXPECT_EQ(points[0].val_accuracy, 0.2);
  EXPECT_EQ(points[1].epoch, 2);
  EXPECT_EQ(points[1].train_loss, 0.6);
  EXPECT_EQ(points[1].val_accuracy, 0.45);

  const std::vector<EpochPoint> all = EpochPointsOf(path.string(), 3);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].train_loss, 0.5);
  // Not validated: no validation point.
  EXPECT_FALSE(all[2].val_loss.has_value());
  EXPECT_FALSE(all[2].val_accuracy.has_value());
}

TEST(EpochPointsOfTest, NoFileNoPoints) {
  EXPECT_TRUE(EpochPointsOf("/no/such/metrics.jsonl", 5).empty());
}

TEST(TensorBoardHookTest, TagsOfStepsAndEpochs) {
  HookTestRun run(ParseConfig(""));
  auto writer = EventFileWriter::Create(run.dir().string());
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::string path = (*writer)->path();
  TensorBoardHook hook(std::move(*writer));
  HOOK_TEST_ASSERT_OK(hook.OnStepEnd(run.context(), StepReport{}));
  const size_t after_empty_window = ReadFileText(path).size();
  StepReport step;
  step.window = {kLoss, kAcc};
  HOOK_TEST_ASSERT_OK(hook.OnStepEnd(run.context(), step));
  std::string file = ReadFileText(path);
  EXPECT_GT(file.size(), after_empty_window);
  EXPECT_THAT(file, HasSubstr("train/loss"));
  EXPECT_THAT(file, HasSubstr("train/acc"));
  EXPECT_THAT(file, HasSubstr("train/learning_rate"));
  EXPECT_THAT(file, HasSubstr("train/images_per_sec"));

  EpochReport not_validated = Epoch(1, 0.5, 0.5, /*validated=*/false);
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), not_validated));
  file = ReadFileText(path);
  EXPECT_THAT(file, HasSubstr("epoch/train_loss"));
  EXPECT_THAT(file, HasSubstr("epoch/train_max_logit"));
  EXPECT_THAT(file, HasSubstr("epoch/images_per_sec"));
  EXPECT_THAT(file, Not(HasSubstr("validation/")));
  EpochReport validated = Epoch(2, 0.5, 0.5, /*validated=*/true);
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), validated));
  file = ReadFileText(path);
  EXPECT_THAT(file, HasSubstr("validation/loss"));
  EXPECT_THAT(file, HasSubstr("validation/acc"));
}

TEST(CurvesHookTest, RewrittenAfterEveryEpochWithValidatedPointsOnly) {
  HookTestRun run(ParseConfig(""));
  CurvesHook hook(0);
  HOOK_TEST_ASSERT_OK(hook.OnRunStart(run.context()));
  EpochReport first = Epoch(1, 0.5, 0.25, /*validated=*/true, 0.75, 0.125);
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), first));
  std::string svg = ReadFileText(run.dir() / "curves.svg");
  EXPECT_THAT(svg, HasSubstr("<title>train loss, epoch 1: 0.5000</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>train accuracy, epoch 1: 25.00%</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>validation loss, epoch 1: 0.7500</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>validation accuracy, epoch 1: 12.50%</title>"));
  EpochReport second = Epoch(2, 0.375, 0.5, /*validated=*/false, 0.75, 0.125);
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), second));
  svg = ReadFileText(run.dir() / "curves.svg");
  EXPECT_THAT(svg, HasSubstr("<title>train loss, epoch 2: 0.3750</title>"));
  EXPECT_THAT(svg, Not(HasSubstr("validation loss, epoch 2")));
  EXPECT_THAT(svg, HasSubstr("<title>train loss, epoch 1: 0.5000</title>"));
}

TEST(CurvesHookTest, AResumedRunStartsFromTheMetricsFile) {
  HookTestRun run(ParseConfig(""));
  std::ofstream(run.dir() / "metrics.jsonl")
      << "{\"event\":\"epoch\",\"epoch\":1,\"train_loss\":0.9,\"train_acc\":0.1,"
         "\"validated\":false}\n"
      << "{\"event\":\"epoch\",\"epoch\":2,\"train_loss\":0.8,\"train_acc\":0.2,"
         "\"validated\":false}\n";
  CurvesHook hook(/*resumed_epochs=*/1);  // epoch 2 is trained again
  HOOK_TEST_ASSERT_OK(hook.OnRunStart(run.context()));
  EpochReport second = Epoch(2, 0.375, 0.5, /*validated=*/false);
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), second));
  const std::string svg = ReadFileText(run.dir() / "curves.svg");
  EXPECT_THAT(svg, HasSubstr("<title>train loss, epoch 1: 0.9000</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>train loss, epoch 2: 0.3750</title>"));
  EXPECT_THAT(svg, Not(HasSubstr("epoch 2: 0.8000")));
}

}  // namespace
}  // namespace pipeline
