// SIGTERM and SIGINT to `train` as a user sends them: to one process and to
// the launcher of a two-process ddp run. Without checkpoint_on_signal the
// run stops at once; with it, every rank stops after the same step with a
// step checkpoint, and --resume=auto ends bitwise equal to a run that was
// never interrupted. Exit status 128 + the signal, one line saying so, and
// no process left behind.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/background_process.h"
#include "pipeline/testing/deterministic_run.h"
#include "pipeline/testing/same_weights.h"

namespace pipeline {
namespace {

using ::pipeline::testing::ExpectSameModel;
using ::testing::HasSubstr;
using ::testing::Not;

// 2 epochs of 12 steps, of ResNet18: "stopped at once" is told apart from
// "after a few more steps" by counting step lines, so a step must take
// longer than a signal takes to arrive (small_cnn's take a millisecond).
std::string WriteConfig(const std::string& dir, bool ddp) {
  return testing::WriteDeterministicRunConfig(dir, ddp, {96, 20, 5, "keep_last: 0", "resnet"});
}

using testing::BackgroundProcess;

BackgroundProcess StartTrainProcess(const std::vector<std::string>& arguments,
                                    const std::string& log) {
  std::vector<std::string> command = {"tools/train"};
  command.insert(command.end(), arguments.begin(), arguments.end());
  return BackgroundProcess(command, log);
}

// Whether any worker the launcher started (pids from its output) still
// runs: a launcher must never leave one behind.
bool AnyWorkerLeft(const std::string& output) {
  for (const auto& [rank, pid] : testing::LauncherWorkerPids(output)) {
    if (testing::ProcessIsAlive(pid)) return true;
  }
  return false;
}

int RunTrain(const std::string& arguments, const std::string& log) {
  const int status = std::system(("tools/train " + arguments + " >> " + log + " 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// How many step progress lines `output` holds: a run stopped "at once"
// logs at most the step that was running when the signal came.
int StepLines(const std::string& output) {
  const std::regex step(" step [0-9]+/[0-9]+");
  return static_cast<int>(std::distance(
      std::sregex_iterator(output.begin(), output.end(), step), std::sregex_iterator()));
}

// The N of every "stopped by ... after step N" line of `log`, in order.
std::vector<int> StoppedAfterSteps(const std::string& log) {
  std::vector<int> steps;
  const std::string text = testing::ReadFile(log);
  const std::regex line("stopped by [^\\n]* after step ([0-9]+) ");
  for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it) {
    steps.push_back(std::stoi((*it)[1]));
  }
  return steps;
}

TEST(StopSignalTest, SigtermStopsOneProcessAtOnce) {
  const std::string dir = ::testing::TempDir() + "/signal_single_now";
  const std::string config = WriteConfig(dir, false);
  const std::string log = dir + "/log";
  BackgroundProcess run = StartTrainProcess({"--config=" + config, "--set=trainer.epochs=50"}, log);
  ASSERT_TRUE(run.WaitForOutput(" step 3/")) << run.Output();
  const int steps_before = StepLines(run.Output());
  ASSERT_TRUE(run.Signal(SIGTERM));
  EXPECT_EQ(run.Wait(), 143) << run.Output();
  EXPECT_THAT(run.Output(), HasSubstr("error: stopped by SIGTERM (Terminated)"));
  // At once: no step after the one that was running.
  EXPECT_LE(StepLines(run.Output()), steps_before + 1) << run.Output();
}

TEST(StopSignalTest, ASecondSigintStopsAtOnceEvenWithCheckpointOnSignal) {
  const std::string dir = ::testing::TempDir() + "/signal_single_twice";
  const std::string config = WriteConfig(dir, false);
  const std::string log = dir + "/log";
  BackgroundProcess run =
      StartTrainProcess({"--config=" + config, "--set=trainer.epochs=50",
                         "--set=checkpoint.checkpoint_on_signal=true"},
                        log);
  ASSERT_TRUE(run.WaitForOutput(" step 3/")) << run.Output();
  ASSERT_TRUE(run.Signal(SIGINT));
  ASSERT_TRUE(run.WaitForOutput("send it again to stop at once")) << run.Output();
  ASSERT_TRUE(run.Signal(SIGINT));
  const int exit_code = run.Wait();
  const std::string output = run.Output();
  // Either the step was still running (the second signal ended it) or it
  // had already finished with its checkpoint; both end as SIGINT says.
  EXPECT_EQ(exit_code, 130) << output;
  EXPECT_THAT(output, HasSubstr("stopped by SIGINT (Interrupt)"));
}

TEST(StopSignalTest, CheckpointOnSignalThenResumeEndsBitwiseEqual) {
  const std::string root = ::testing::TempDir() + "/signal_single_resume";
  const std::string reference = WriteConfig(root + "/reference", false);
  ASSERT_EQ(RunTrain("--config=" + reference, root + "/reference/log"), 0)
      << testing::ReadFile(root + "/reference/log");
  const std::string dir = root + "/stopped";
  const std::string config = WriteConfig(dir, false);
  const std::string log = dir + "/log";
  BackgroundProcess run =
      StartTrainProcess({"--config=" + config, "--set=checkpoint.checkpoint_on_signal=true"}, log);
  ASSERT_TRUE(run.WaitForOutput("epoch 1/2 step 4/12")) << run.Output();
  ASSERT_TRUE(run.Signal(SIGTERM));
  EXPECT_EQ(run.Wait(), 143) << run.Output();
  const std::string output = run.Output();
  const std::vector<int> steps = StoppedAfterSteps(log);
  ASSERT_EQ(steps.size(), 1u) << output;
  SCOPED_TRACE(absl::StrCat("stopped after step ", steps[0]));
  EXPECT_GE(steps[0], 4);
  EXPECT_THAT(output, HasSubstr("error: stopped by SIGTERM (Terminated) after step"));
  const std::string checkpoint = absl::StrCat(dir, "/out/checkpoint_step_", steps[0], ".pt");
  EXPECT_TRUE(std::filesystem::exists(checkpoint)) << output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/out/checkpoint_epoch_2.pt"));

  const std::string resumed = dir + "/resumed_log";
  ASSERT_EQ(RunTrain("--config=" + config + " --resume=auto", resumed), 0) << testing::ReadFile(resumed);
  EXPECT_THAT(testing::ReadFile(resumed), HasSubstr(absl::StrCat("resume: continuing from ", checkpoint)));
  ExpectSameModel(root + "/reference/out/checkpoint_epoch_2.pt",
                  dir + "/out/checkpoint_epoch_2.pt");
}

TEST(StopSignalTest, SigtermToTheLauncherStopsEveryWorker) {
  const std::string dir = ::testing::TempDir() + "/signal_ddp_now";
  const std::string config = WriteConfig(dir, true);
  const std::string log = dir + "/log";
  // A stop is not a failure to restart from.
  BackgroundProcess run = StartTrainProcess(
      {"--config=" + config, "--set=trainer.epochs=50", "--set=strategy.options.max_restarts=2"},
      log);
  ASSERT_TRUE(run.WaitForOutput(" step 3/")) << run.Output();
  const int steps_before = StepLines(run.Output());
  ASSERT_TRUE(run.Signal(SIGTERM));
  EXPECT_EQ(run.Wait(), 143) << run.Output();
  const std::string output = run.Output();
  EXPECT_THAT(output, Not(HasSubstr("launcher: restart")));
  // At once: each of the two ranks logs at most the step it was in.
  EXPECT_LE(StepLines(output), steps_before + 2) << output;
  EXPECT_THAT(output, HasSubstr("launcher: Terminated; passing it to every worker"));
  EXPECT_THAT(output, HasSubstr("[rank 1] error: stopped by SIGTERM (Terminated)"));
  EXPECT_THAT(output, HasSubstr("error: stopped by signal 15 (Terminated); every worker has "
                                "exited"));
  EXPECT_FALSE(AnyWorkerLeft(output)) << output;
}

TEST(StopSignalTest, DdpRanksAgreeOnTheStepAndResumeEndsBitwiseEqual) {
  const std::string root = ::testing::TempDir() + "/signal_ddp_resume";
  const std::string reference = WriteConfig(root + "/reference", true);
  ASSERT_EQ(RunTrain("--config=" + reference, root + "/reference/log"), 0)
      << testing::ReadFile(root + "/reference/log");
  const std::string dir = root + "/stopped";
  const std::string config = WriteConfig(dir, true);
  const std::string log = dir + "/log";
  BackgroundProcess run =
      StartTrainProcess({"--config=" + config, "--set=checkpoint.checkpoint_on_signal=true"}, log);
  ASSERT_TRUE(run.WaitForOutput("epoch 1/2 step 4/12")) << run.Output();
  ASSERT_TRUE(run.Signal(SIGTERM));
  EXPECT_EQ(run.Wait(), 143) << run.Output();
  const std::string output = run.Output();
  // Each rank says where it stopped: the same step.
  const std::vector<int> steps = StoppedAfterSteps(log);
  ASSERT_EQ(steps.size(), 2u) << output;
  EXPECT_EQ(steps[0], steps[1]) << output;
  EXPECT_THAT(output, HasSubstr("error: stopped by signal 15 (Terminated); every worker has "
                                "exited"));
  const std::string checkpoint = absl::StrCat(dir, "/out/checkpoint_step_", steps[0], ".pt");
  EXPECT_TRUE(std::filesystem::exists(checkpoint)) << output;
  EXPECT_FALSE(AnyWorkerLeft(output)) << output;

  const std::string resumed = dir + "/resumed_log";
  ASSERT_EQ(RunTrain("--config=" + config + " --resume=auto", resumed), 0) << testing::ReadFile(resumed);
  EXPECT_THAT(testing::ReadFile(resumed), HasSubstr(absl::StrCat("resume: continuing from ", checkpoint)));
  ExpectSameModel(root + "/reference/out/checkpoint_epoch_2.pt",
                  dir + "/out/checkpoint_epoch_2.pt");
}

}  // namespace
}  // namespace pipeline
