// SIGTERM and SIGINT to `train` as a user sends them: to one process and to
// the launcher of a two-process ddp run. Without checkpoint_on_signal the
// run stops at once; with it, every rank stops after the same step with a
// step checkpoint, and --resume=auto ends bitwise equal to a run that was
// never interrupted. Exit status 128 + the signal, one line saying so, and
// no process left behind.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/deterministic_run.h"
#include "pipeline/testing/same_weights.h"

namespace pipeline {
namespace {

using ::pipeline::testing::ExpectSameModel;
using ::testing::HasSubstr;
using ::testing::Not;

// 2 epochs of 12 steps.
std::string WriteConfig(const std::string& dir, bool ddp) {
  return testing::WriteDeterministicRunConfig(dir, ddp, {96, 20, 5, "keep_last: 0"});
}

// `tools/train` with `arguments`, its stdout and stderr into `log`; the
// pid is the train process itself (no shell between), so signals reach it.
pid_t StartTrain(const std::vector<std::string>& arguments, const std::string& log) {
  std::vector<std::string> command = {"tools/train"};
  command.insert(command.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (std::string& arg : command) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

bool WaitForText(const std::string& log, const std::string& text, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (testing::ReadFile(log).find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

struct Exit {
  int code = -1;  // the exit status, or -1 when it did not exit normally in time
  double seconds = 0;
};

Exit WaitForExit(pid_t pid, double seconds) {
  const auto start = std::chrono::steady_clock::now();
  Exit exit;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    exit.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (exit.seconds > seconds) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return exit;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  exit.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) exit.code = WEXITSTATUS(status);
  return exit;
}

// Processes still running with `config` in their command line (workers
// the launcher would have left behind).
bool AnyProcessOf(const std::string& config) {
  // "[c]" keeps pgrep from matching the shell that runs it.
  return std::system(("pgrep -f '[c]onfig=" + config + "' > /dev/null").c_str()) == 0;
}

int RunTrain(const std::string& arguments, const std::string& log) {
  const int status = std::system(("tools/train " + arguments + " >> " + log + " 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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
  const pid_t pid = StartTrain({"--config=" + config, "--set=trainer.epochs=50"}, log);
  ASSERT_TRUE(WaitForText(log, " step 3/", 120)) << testing::ReadFile(log);
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  const Exit exit = WaitForExit(pid, 30);
  EXPECT_EQ(exit.code, 143) << testing::ReadFile(log);
  EXPECT_LT(exit.seconds, 5);
  EXPECT_THAT(testing::ReadFile(log), HasSubstr("error: stopped by SIGTERM (Terminated)"));
  EXPECT_FALSE(AnyProcessOf(config));
}

TEST(StopSignalTest, ASecondSigintStopsAtOnceEvenWithCheckpointOnSignal) {
  const std::string dir = ::testing::TempDir() + "/signal_single_twice";
  const std::string config = WriteConfig(dir, false);
  const std::string log = dir + "/log";
  const pid_t pid = StartTrain({"--config=" + config, "--set=trainer.epochs=50",
                                "--set=checkpoint.checkpoint_on_signal=true"},
                               log);
  ASSERT_TRUE(WaitForText(log, " step 3/", 120)) << testing::ReadFile(log);
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  ASSERT_TRUE(WaitForText(log, "send it again to stop at once", 10)) << testing::ReadFile(log);
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  const Exit exit = WaitForExit(pid, 30);
  const std::string output = testing::ReadFile(log);
  // Either the step was still running (the second signal ended it) or it
  // had already finished with its checkpoint; both end as SIGINT says.
  EXPECT_EQ(exit.code, 130) << output;
  EXPECT_THAT(output, HasSubstr("stopped by SIGINT (Interrupt)"));
  EXPECT_FALSE(AnyProcessOf(config));
}

TEST(StopSignalTest, CheckpointOnSignalThenResumeEndsBitwiseEqual) {
  const std::string root = ::testing::TempDir() + "/signal_single_resume";
  const std::string reference = WriteConfig(root + "/reference", false);
  ASSERT_EQ(RunTrain("--config=" + reference, root + "/reference/log"), 0)
      << testing::ReadFile(root + "/reference/log");
  const std::string dir = root + "/stopped";
  const std::string config = WriteConfig(dir, false);
  const std::string log = dir + "/log";
  const pid_t pid =
      StartTrain({"--config=" + config, "--set=checkpoint.checkpoint_on_signal=true"}, log);
  ASSERT_TRUE(WaitForText(log, "epoch 1/2 step 4/12", 120)) << testing::ReadFile(log);
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  const Exit exit = WaitForExit(pid, 60);
  const std::string output = testing::ReadFile(log);
  EXPECT_EQ(exit.code, 143) << output;
  const std::vector<int> steps = StoppedAfterSteps(log);
  ASSERT_EQ(steps.size(), 1u) << output;
  SCOPED_TRACE(absl::StrCat("stopped after step ", steps[0]));
  EXPECT_GE(steps[0], 4);
  EXPECT_THAT(output, HasSubstr("error: stopped by SIGTERM (Terminated) after step"));
  const std::string checkpoint = absl::StrCat(dir, "/out/checkpoint_step_", steps[0], ".pt");
  EXPECT_TRUE(std::filesystem::exists(checkpoint)) << output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/out/checkpoint_epoch_2.pt"));
  EXPECT_FALSE(AnyProcessOf(config));

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
  const pid_t pid = StartTrain(
      {"--config=" + config, "--set=trainer.epochs=50", "--set=strategy.options.max_restarts=2"},
      log);
  ASSERT_TRUE(WaitForText(log, " step 3/", 120)) << testing::ReadFile(log);
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  const Exit exit = WaitForExit(pid, 30);
  const std::string output = testing::ReadFile(log);
  EXPECT_THAT(output, Not(HasSubstr("launcher: restart")));
  EXPECT_EQ(exit.code, 143) << output;
  EXPECT_LT(exit.seconds, 5);
  EXPECT_THAT(output, HasSubstr("launcher: Terminated; passing it to every worker"));
  EXPECT_THAT(output, HasSubstr("[rank 1] error: stopped by SIGTERM (Terminated)"));
  EXPECT_THAT(output, HasSubstr("error: stopped by signal 15 (Terminated); every worker has "
                                "exited"));
  EXPECT_FALSE(AnyProcessOf(config));
}

TEST(StopSignalTest, DdpRanksAgreeOnTheStepAndResumeEndsBitwiseEqual) {
  const std::string root = ::testing::TempDir() + "/signal_ddp_resume";
  const std::string reference = WriteConfig(root + "/reference", true);
  ASSERT_EQ(RunTrain("--config=" + reference, root + "/reference/log"), 0)
      << testing::ReadFile(root + "/reference/log");
  const std::string dir = root + "/stopped";
  const std::string config = WriteConfig(dir, true);
  const std::string log = dir + "/log";
  const pid_t pid =
      StartTrain({"--config=" + config, "--set=checkpoint.checkpoint_on_signal=true"}, log);
  ASSERT_TRUE(WaitForText(log, "epoch 1/2 step 4/12", 120)) << testing::ReadFile(log);
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  const Exit exit = WaitForExit(pid, 60);
  const std::string output = testing::ReadFile(log);
  EXPECT_EQ(exit.code, 143) << output;
  // Each rank says where it stopped: the same step.
  const std::vector<int> steps = StoppedAfterSteps(log);
  ASSERT_EQ(steps.size(), 2u) << output;
  EXPECT_EQ(steps[0], steps[1]) << output;
  EXPECT_THAT(output, HasSubstr("error: stopped by signal 15 (Terminated); every worker has "
                                "exited"));
  const std::string checkpoint = absl::StrCat(dir, "/out/checkpoint_step_", steps[0], ".pt");
  EXPECT_TRUE(std::filesystem::exists(checkpoint)) << output;
  EXPECT_FALSE(AnyProcessOf(config));

  const std::string resumed = dir + "/resumed_log";
  ASSERT_EQ(RunTrain("--config=" + config + " --resume=auto", resumed), 0) << testing::ReadFile(resumed);
  EXPECT_THAT(testing::ReadFile(resumed), HasSubstr(absl::StrCat("resume: continuing from ", checkpoint)));
  ExpectSameModel(root + "/reference/out/checkpoint_epoch_2.pt",
                  dir + "/out/checkpoint_epoch_2.pt");
}

}  // namespace
}  // namespace pipeline
