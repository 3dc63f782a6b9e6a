#include "pipeline/util/subprocess.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/temp_path.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

std::string ReadAll(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) text.append(buffer, n);
  return text;
}

std::unique_ptr<Subprocess> StartOrDie(SubprocessOptions options) {
  auto child = Subprocess::Start(options);
  EXPECT_TRUE(child.ok()) << child.status();
  return child.ok() ? std::move(*child) : nullptr;
}

TEST(SubprocessTest, PipesCarryStdoutAndStderrApartAndTheExitStatusComesBack) {
  SubprocessOptions options;
  options.argv = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3"};
  options.output = SubprocessOptions::Output::kPipes;
  auto child = StartOrDie(options);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(ReadAll(child->stdout_fd()), "out\n");
  EXPECT_EQ(ReadAll(child->stderr_fd()), "err\n");
  EXPECT_EQ(child->Wait(), 3);
  EXPECT_EQ(DescribeExit(child->wait_status()), "exited with status 3");
}

TEST(SubprocessTest, EnvironmentEntriesReplaceOrAddToTheParents) {
  ::setenv("PIPELINE_SUBPROCESS_TEST_KEPT", "kept", 1);
  ::setenv("PIPELINE_SUBPROCESS_TEST_REPLACED", "old", 1);
  SubprocessOptions options;
  options.argv = {"/bin/sh", "-c",
                  "echo $PIPELINE_SUBPROCESS_TEST_KEPT $PIPELINE_SUBPROCESS_TEST_REPLACED "
                  "$PIPELINE_SUBPROCESS_TEST_ADDED"};
  options.environment = {"PIPELINE_SUBPROCESS_TEST_REPLACED=new",
                         "PIPELINE_SUBPROCESS_TEST_ADDED=added"};
  options.output = SubprocessOptions::Output::kPipes;
  auto child = StartOrDie(options);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(ReadAll(child->stdout_fd()), "kept new added\n");
  EXPECT_EQ(child->Wait(), 0);
}

TEST(SubprocessTest, FileOutputHoldsStdoutAndStderrTogether) {
  const std::string log = testing::TempPath("subprocess_output.txt");
  SubprocessOptions options;
  options.argv = {"/bin/sh", "-c", "echo one; echo two >&2"};
  options.output = SubprocessOptions::Output::kFile;
  options.output_file = log;
  auto child = StartOrDie(options);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(child->Wait(), 0);
  std::ifstream file(log);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(text.str(), "one\ntwo\n");
}

TEST(SubprocessTest, AnUnwritableOutputFileIsAnErrorBeforeAnythingStarts) {
  SubprocessOptions options;
  options.argv = {"/bin/true"};
  options.output = SubprocessOptions::Output::kFile;
  options.output_file = "/nonexistent-folder/output.txt";
  auto child = Subprocess::Start(options);
  ASSERT_FALSE(child.ok());
  EXPECT_THAT(child.status().message(), HasSubstr("/nonexistent-folder/output.txt"));
}

TEST(SubprocessTest, AProgramThatCannotRunExits127SayingWhy) {
  SubprocessOptions options;
  options.argv = {"/nonexistent/program"};
  options.output = SubprocessOptions::Output::kPipes;
  auto child = StartOrDie(options);
  ASSERT_NE(child, nullptr);
  EXPECT_THAT(ReadAll(child->stderr_fd()),
              HasSubstr("cannot start /nonexistent/program: No such file or directory"));
  EXPECT_EQ(child->Wait(), 127);
}

TEST(SubprocessTest, PollSeesStopContinueAndExitInTurn) {
  SubprocessOptions options;
  options.argv = {"/bin/sh", "-c", "exec sleep 1000"};
  auto child = StartOrDie(options);
  ASSERT_NE(child, nullptr);
  auto next_event = [&] {
    ChildEvent event;
    while ((event = child->Poll()).kind == ChildEvent::Kind::kNone) ::usleep(1000);
    return event;
  };
  ASSERT_TRUE(child->Signal(SIGSTOP));
  const ChildEvent stopped = next_event();
  EXPECT_EQ(stopped.kind, ChildEvent::Kind::kStopped);
  EXPECT_EQ(stopped.stop_signal, SIGSTOP);
  ASSERT_TRUE(child->Signal(SIGCONT));
  EXPECT_EQ(next_event().kind, ChildEvent::Kind::kContinued);
  ASSERT_TRUE(child->Signal(SIGTERM));
  const ChildEvent exited = next_event();
  EXPECT_EQ(exited.kind, ChildEvent::Kind::kExited);
  EXPECT_EQ(child->exit_code(), 128 + SIGTERM);
  EXPECT_THAT(DescribeExit(exited.wait_status), HasSubstr("was killed by signal 15"));
  EXPECT_FALSE(child->Signal(SIGTERM)) << "a reaped child takes no more signals";
}

TEST(SubprocessTest, DestroyingARunningChildKillsAndReapsIt) {
  SubprocessOptions options;
  options.argv = {"/bin/sh", "-c", "exec sleep 1000"};
  pid_t pid;
  {
    auto child = StartOrDie(options);
    ASSERT_NE(child, nullptr);
    pid = child->pid();
    EXPECT_FALSE(child->Exited());
  }
  errno = 0;
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH) << "the child is still there (or unreaped)";
}

TEST(SubprocessTest, NoProgramIsAnError) {
  EXPECT_FALSE(Subprocess::Start(SubprocessOptions()).ok());
}

}  // namespace
}  // namespace pipeline
