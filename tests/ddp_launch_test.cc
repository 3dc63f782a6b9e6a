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
#include <vector>

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

// The config of the equivalence test: a BatchNorm-free model, so one process
// on batches of 8 and two processes on 4 + 4 of the same samples compute the
// same gradients.
std::string EquivalenceConfig(const std::string& name, bool ddp) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/config.textproto";
  std::ofstream(path) << absl::StrCat(R"pb(
    model {
      name: "small_cnn"
      options {
        [type.googleapis.com/pipeline.SmallCnnOptions] { width: 8 batch_norm: false }
      }
    }
    train_data {
      dataset {
        name: "synthetic"
        options {
          [type.googleapis.com/pipeline.SyntheticOptions] {
            num_samples: 96 height: 8 width: 8 channels: 1 num_classes: 3
          }
        }
      }
    )pb",
                                      ddp ? "sampler { name: \"distributed\" } batch_size: 4"
                                          : "batch_size: 8",
                                      R"pb(
    }
    validation_data {
      dataset {
        name: "synthetic"
        options {
          [type.googleapis.com/pipeline.SyntheticOptions] {
            num_samples: 30 height: 8 width: 8 channels: 1 num_classes: 3 seed_offset: 1
          }
        }
      }
    }
    optimizer {
      name: "sgd"
      options { [type.googleapis.com/pipeline.SgdOptions] { lr: 0.05 momentum: 0.9 } }
    }
    )pb",
                                      ddp ? R"pb(strategy {
                                                   name: "ddp"
                                                   options {
                                                     [type.googleapis.com/pipeline.DdpOptions] {
                                                       nproc_per_node: 2
                                                     }
                                                   }
                                                 })pb"
                                          : "",
                                      R"pb(
    trainer { epochs: 3 seed: 7 }
    checkpoint { every_epochs: 0 }
    output_dir: ")pb",
                                      dir, R"pb(/out"
  )pb");
  return path;
}

// The numbers of one field in every epoch event of a run's output.
std::vector<double> EpochValues(const std::string& output, const std::string& field) {
  std::vector<double> values;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (!absl::StartsWith(line, "{\"event\":\"epoch\"")) continue;
    const size_t at = line.find("\"" + field + "\":");
    if (at == absl::string_view::npos) continue;
    values.push_back(std::stod(std::string(line.substr(at + field.size() + 3))));
  }
  return values;
}

TEST(DdpLaunchTest, TwoProcessesTrainExactlyLikeOneOnTheWholeBatch) {
  std::string outputs[2];
  for (int ddp = 0; ddp < 2; ++ddp) {
    const std::string config = EquivalenceConfig(ddp ? "equal_ddp" : "equal_single", ddp);
    const std::string log = ::testing::TempDir() + (ddp ? "/equal_ddp.log" : "/equal_single.log");
    const int status =
        std::system(("tools/train --config=" + config + " > " + log + " 2>&1").c_str());
    outputs[ddp] = ReadFile(log);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << outputs[ddp];
  }
  EXPECT_THAT(outputs[1], HasSubstr("launcher: started 2 workers"));
  for (const char* field : {"train_loss", "val_loss", "val_acc"}) {
    const std::vector<double> single = EpochValues(outputs[0], field);
    const std::vector<double> ddp = EpochValues(outputs[1], field);
    ASSERT_EQ(single.size(), 3u) << outputs[0];
    ASSERT_EQ(ddp.size(), 3u) << outputs[1];
    for (size_t epoch = 0; epoch < 3; ++epoch) {
      EXPECT_NEAR(single[epoch], ddp[epoch], 1e-4) << field << " of epoch " << epoch + 1;
    }
  }
  // It trained at all: the loss of the last epoch is below the first's.
  const std::vector<double> loss = EpochValues(outputs[0], "train_loss");
  EXPECT_LT(loss.back(), loss.front());
}

}  // namespace
}  // namespace pipeline
