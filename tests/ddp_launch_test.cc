// `train` with the ddp strategy, as a user starts it: the built-in launcher
// runs two worker processes that rendezvous over loopback, train, and report
// once; when a worker dies, the others are stopped and the launcher names it.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::string WriteConfig(const std::string& name, int max_steps) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/config.textproto";
  std::ofstream(path) << absl::StrCat(R"pb(
    model { name: "resnet" }
    train_data {
      dataset {
        name: "synthetic"
        options {
          [type.googleapis.com/pipeline.SyntheticOptions] {
            num_samples: 64 height: 16 width: 16 channels: 1 num_classes: 2
          }
        }
      }
      sampler { name: "distributed" }
    }
    validation_data {
      dataset {
        name: "synthetic"
        options {
          [type.googleapis.com/pipeline.SyntheticOptions] {
            num_samples: 21 height: 16 width: 16 channels: 1 num_classes: 2 seed_offset: 1
          }
        }
      }
      batch_size: 4
    }
    strategy {
      name: "ddp"
      options { [type.googleapis.com/pipeline.DdpOptions] { nproc_per_node: 2 } }
    }
    trainer { batch_size: 4 epochs: 100 max_steps: )pb",
                                      max_steps, R"pb( log_interval: 2 }
    output_dir: ")pb", dir, R"pb(/out"
  )pb");
  return path;
}

TEST(DdpLaunchTest, TwoWorkersTrainAndReportOnce) {
  const std::string config = WriteConfig("ddp_ok", 6);
  const std::string log = ::testing::TempDir() + "/ddp_ok.log";
  const int status = std::system(("tools/train --config=" + config + " > " + log + " 2>&1").c_str());
  const std::string output = ReadFile(log);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  EXPECT_THAT(output, HasSubstr("launcher: started 2 workers (ranks 0-1 of 2)"));
  // Every one of the 21 validation samples is counted exactly once, though
  // 21 does not split evenly between the two ranks.
  EXPECT_THAT(output, HasSubstr("(21 samples)"));
  // Only rank 0 reports: one summary line, unprefixed.
  size_t summaries = 0;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (absl::StartsWith(line, "{\"event\":\"summary\"")) ++summaries;
    EXPECT_FALSE(absl::StrContains(line, "[rank 1] {\"event\"")) << line;
  }
  EXPECT_EQ(summaries, 1u) << output;
  EXPECT_THAT(output, HasSubstr("\"steps\":6"));
}

TEST(DdpLaunchTest, ADeadWorkerStopsTheOthersAndIsNamed) {
  const std::string config = WriteConfig("ddp_kill", 100000);
  const std::string dir = ::testing::TempDir() + "/ddp_kill";
  const std::string log = dir + "/log";
  std::system(("(tools/train --config=" + config + " > " + log + " 2>&1; echo $? > " + dir +
               "/rc) &")
                  .c_str());
  // Wait until both workers train, then SIGKILL the newest process (rank 1);
  // "[c]" keeps pkill from matching the shell that runs it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (ReadFile(log).find("step 2/") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_THAT(ReadFile(log), HasSubstr("step 2/"));
  ASSERT_EQ(std::system(("pkill -9 -n -f '[c]onfig=" + config + "'").c_str()), 0);
  const auto killed = std::chrono::steady_clock::now();
  while (!std::filesystem::exists(dir + "/rc") &&
         std::chrono::steady_clock::now() < killed + std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  ASSERT_TRUE(std::filesystem::exists(dir + "/rc")) << "launcher still running\n" << ReadFile(log);
  EXPECT_LT(seconds, 15.0);
  EXPECT_NE(ReadFile(dir + "/rc"), "0\n");
  EXPECT_THAT(ReadFile(log), HasSubstr("was killed by signal 9 (Killed); stopped the other workers"));
  EXPECT_THAT(ReadFile(log), HasSubstr("error: rank 1 (pid "));
}

}  // namespace
}  // namespace pipeline
