// Elastic jobs (train --nnodes=MIN:MAX) as users start them, one launcher
// per "machine", all on loopback: a node lost mid-run leaves the others to
// finish, re-sharding the interrupted epoch, exactly as a resume under the
// smaller world size would; a node that arrives while the job runs joins at
// its next restart; a node that arrives too late, or with another config,
// leaves the job alone; bad --nnodes flags are flag errors.
//
// Every wait is for an event (a log line, an exit, a stopped process), not
// a deadline; the last-call timeout (20 s) only bounds how long a round
// waits for a node that is gone, and the second node of a round is started
// once the host is up, so it joins well within it.

#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/background_process.h"
#include "pipeline/testing/free_port.h"
#include "pipeline/testing/same_weights.h"
#include "pipeline/testing/small_cnn_run.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::BackgroundProcess;
using testing::ReadFile;

std::string FreshDir(const std::string& name) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/elastic_", ::getpid(), "_", name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// small_cnn (with BatchNorm) on 16x16 synthetic images, one worker per
// node, 4 samples per rank and step, 40 steps, a checkpoint every 4 (all
// kept), deterministic. The tests hold a worker still (SIGSTOP) before they
// take its node away, so no step count is ever too short.
std::string DeterministicConfig(const std::string& dir) {
  const std::string path = dir + "/config.textproto";
  const std::string synthetic = R"pb(
    name: "synthetic"
    options {
      [type.googleapis.com/pipeline.SyntheticOptions] {
        height: 16 width: 16 channels: 1 num_classes: 2 )pb";
  std::ofstream(path) << absl::StrCat(R"pb(
    model { name: "small_cnn" }
    train_data {
      dataset {)pb", synthetic, R"pb(num_samples: 64 } }
      }
      sampler { name: "distributed" }
    }
    validation_data {
      dataset {)pb", synthetic, R"pb(num_samples: 21 seed_offset: 1 } }
      }
      batch_size: 4
    }
    strategy {
      name: "ddp"
      options {
        [type.googleapis.com/pipeline.DdpOptions] {
          nproc_per_node: 1 max_restarts: 2 timeout_seconds: 60
        }
      }
    }
    trainer { batch_size: 4 epochs: 100 max_steps: 40 log_interval: 2 seed: 7 deterministic: true }
    checkpoint { every_steps: 4 keep_last: 0 }
    output_dir: ")pb", dir, R"pb(/out"
  )pb");
  return path;
}

// small_cnn, a few dozen steps: for cases where the training is not the point.
std::string SmallConfig(const std::string& dir) {
  const std::string path = dir + "/config.textproto";
  testing::SmallCnnRun run;
  run.strategy = testing::DdpStrategy(1);
  run.distributed_sampler = true;
  run.batch_size = 4;
  run.output_dir = dir + "/out";
  std::ofstream(path) << testing::SmallCnnConfigText(run);
  return path;
}

std::unique_ptr<BackgroundProcess> StartNode(const std::string& config, const std::string& log,
                                             int port, const std::string& nnodes,
                                             std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {"tools/train", "--config=" + config, "--nnodes=" + nnodes,
                                   "--master_addr=127.0.0.1",
                                   absl::StrCat("--master_port=", port),
                                   "--rdzv_last_call_timeout=20"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<BackgroundProcess>(argv, log);
}

// The pid of a node's (one) worker, as its launcher last printed it.
pid_t WorkerPid(const BackgroundProcess& node) {
  const auto pids = testing::LauncherWorkerPids(node.Output());
  EXPECT_FALSE(pids.empty()) << node.Output();
  return pids.empty() ? -1 : pids.back().second;
}

// A job of two nodes on the deterministic config: the host, then (once it hosts
// the rendezvous, so the guest joins round 0 well within its last call) a
// guest whose log is <dir>/<guest>.log.
struct TwoNodeJob {
  std::string dir, config;
  int port = 0;
  std::unique_ptr<BackgroundProcess> host, guest;
};

TwoNodeJob StartTwoNodeJob(const std::string& name, const std::string& guest) {
  TwoNodeJob job;
  job.dir = FreshDir(name);
  job.config = DeterministicConfig(job.dir);
  job.port = testing::FreePort();
  job.host = StartNode(job.config, job.dir + "/host.log", job.port, "1:2");
  EXPECT_TRUE(job.host->WaitForOutput("launcher: hosting the elastic rendezvous"))
      << job.host->Output();
  job.guest = StartNode(job.config, job.dir + "/" + guest + ".log", job.port, "1:2");
  return job;
}

// The path in the last match of `pattern` (one group) in a run's output.
std::string LastPath(const std::string& output, const std::string& pattern) {
  const std::regex line(pattern);
  std::string path;
  for (std::sregex_iterator it(output.begin(), output.end(), line), end; it != end; ++it) {
    path = (*it)[1];
  }
  return path;
}

// The checkpoint a run resumed from last ("resume: continuing from <path>
// (step N)"), and the last one it wrote at a step or an epoch's end
// ("checkpoint: <path>"; checkpoint_best.pt holds other weights).
std::string ResumedFrom(const std::string& output) {
  return LastPath(output, "resume: continuing from (\\S+) \\(step");
}
std::string LastWritten(const std::string& output) {
  return LastPath(output, "checkpoint: (\\S+_(?:step|epoch)_[0-9]+\\.pt)");
}

// Two nodes train; the second machine is lost (its launcher killed, its
// worker with it). The host's worker fails on the broken collective, its
// launcher meets the rendezvous again, round 1 forms with the host alone
// after the last call, and the job finishes at world size 1 from the
// latest checkpoint: bit for bit what resuming that checkpoint with one
// worker gives.
TEST(ElasticLaunchTest, ALostNodeLeavesTheOthersToFinishTheJobWithoutIt) {
  TwoNodeJob job = StartTwoNodeJob("lost_node", "lost");
  const std::string& dir = job.dir;
  const std::string& config = job.config;
  BackgroundProcess* host = job.host.get();
  BackgroundProcess* lost = job.guest.get();
  ASSERT_TRUE(host->WaitForOutput("step 6/")) << host->Output();
  // Held still first, so the job cannot finish before the node is lost.
  ASSERT_EQ(::kill(WorkerPid(*lost), SIGSTOP), 0);
  ASSERT_TRUE(lost->Signal(SIGKILL));
  lost->Wait();
  EXPECT_EQ(host->Wait(), 0) << host->Output();
  const std::string output = host->Output();
  EXPECT_THAT(output, HasSubstr("launcher: rendezvous round 0: 2 nodes, this one is node 0"));
  EXPECT_THAT(output, HasSubstr("launcher: restart 1 of 2 after: rank 0 (pid "));
  EXPECT_THAT(output, HasSubstr("launcher: rendezvous round 1: 1 node, this one is node 0"));
  EXPECT_THAT(output, HasSubstr("\"steps\":40"));
  EXPECT_THAT(ReadFile(dir + "/lost.log"),
              HasSubstr("launcher: rendezvous round 0: 2 nodes, this one is node 1"));

  const std::string checkpoint = ResumedFrom(output);
  ASSERT_FALSE(checkpoint.empty()) << output;
  const std::string reference = FreshDir("lost_node_reference");
  const int status = std::system(
      absl::StrCat("tools/train --config=", config, " --resume=", checkpoint,
                   " --set=output_dir=", reference, " > ", reference, "/log 2>&1")
          .c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadFile(reference + "/log");
  const std::string last = LastWritten(output);
  ASSERT_FALSE(last.empty()) << output;
  testing::ExpectSameModel(last, reference + "/" + std::filesystem::path(last).filename().string());
}

// A third node arrives while a round of two runs: it waits. When the second
// node is lost, the host and the newcomer form round 1, both as world size
// 2 again, and finish the job. The run is held still (a stopped worker)
// while the newcomer arrives, so nothing races the end of the job.
TEST(ElasticLaunchTest, ANodeArrivingDuringTheJobJoinsAtItsNextRestart) {
  TwoNodeJob job = StartTwoNodeJob("late_node", "leaving");
  BackgroundProcess* host = job.host.get();
  BackgroundProcess* leaving = job.guest.get();
  ASSERT_TRUE(host->WaitForOutput("step 2/")) << host->Output();
  const pid_t leaving_worker = WorkerPid(*leaving);
  ASSERT_EQ(::kill(leaving_worker, SIGSTOP), 0);
  auto newcomer = StartNode(job.config, job.dir + "/newcomer.log", job.port, "1:2");
  ASSERT_TRUE(newcomer->WaitForOutput("formed without this node; it joins when the job next "
                                      "restarts"))
      << newcomer->Output();
  // The machine is lost: its launcher and, with it, the stopped worker.
  ASSERT_TRUE(leaving->Signal(SIGKILL));
  leaving->Wait();
  EXPECT_EQ(host->Wait(), 0) << host->Output();
  EXPECT_EQ(newcomer->Wait(), 0) << newcomer->Output();
  EXPECT_THAT(host->Output(), HasSubstr("launcher: rendezvous round 1: 2 nodes, this one is node 0"));
  EXPECT_THAT(host->Output(), HasSubstr("\"steps\":40"));
  const std::string joined = newcomer->Output();
  EXPECT_THAT(joined, HasSubstr("launcher: rendezvous round 1: 2 nodes, this one is node 1"));
  EXPECT_THAT(joined, HasSubstr("(ranks 1-1 of 2)"));
}

// Round 0 is the host alone (MAX 1). A node with another config is refused
// at once and the job goes on; a node with the same config waits, and when
// the job finishes is told there is nothing left to join.
TEST(ElasticLaunchTest, ALateOrMismatchedNodeLeavesTheJobAlone) {
  const std::string dir = FreshDir("too_late");
  const std::string config = SmallConfig(dir);
  const int port = testing::FreePort();
  auto host = StartNode(config, dir + "/host.log", port, "1:1");
  ASSERT_TRUE(host->WaitForOutput("launcher: worker pids:")) << host->Output();
  const pid_t worker = WorkerPid(*host);
  ASSERT_EQ(::kill(worker, SIGSTOP), 0);
  auto mismatched = StartNode(config, dir + "/mismatched.log", port, "1:1",
                              {"--set=trainer.seed=8"});
  EXPECT_EQ(mismatched->Wait(), 2) << mismatched->Output();
  EXPECT_THAT(mismatched->Output(),
              HasSubstr("this node's resolved config differs from the rendezvous host's"));
  auto late = StartNode(config, dir + "/late.log", port, "1:1");
  ASSERT_TRUE(late->WaitForOutput("formed without this node")) << late->Output();
  ASSERT_EQ(::kill(worker, SIGCONT), 0);
  EXPECT_EQ(host->Wait(), 0) << host->Output();
  EXPECT_EQ(late->Wait(), 0) << late->Output();
  EXPECT_THAT(late->Output(),
              HasSubstr("launcher: the job finished before this node could join; nothing to do"));
  EXPECT_THAT(late->Output(), Not(HasSubstr("launcher: started")));
}

TEST(ElasticLaunchTest, BadNodeFlagsAreFlagErrors) {
  const std::string dir = FreshDir("flags");
  const std::string config = SmallConfig(dir);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--nnodes=3:2 --master_port=29500", "--nnodes=3:2: MIN (3) is larger than MAX (2)"},
      {"--nnodes=0:2 --master_port=29500", "--nnodes=0:2: MIN is 0, at least 1 node is needed"},
      {"--nnodes=1:2", "set --master_port (the same on every node)"},
      {"--nnodes=1:2 --master_port=29500 --node_rank=1", "leave --node_rank out"},
      {"--nnodes=2 --node_rank=2 --master_port=29500", "--node_rank=2: must be 0..1"},
  };
  for (const auto& [flags, message] : cases) {
    const std::string log = dir + "/log";
    const int status =
        std::system(absl::StrCat("tools/train --config=", config, " ", flags, " > ", log, " 2>&1")
                        .c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << flags;
    EXPECT_THAT(ReadFile(log), HasSubstr(message)) << flags;
    EXPECT_THAT(ReadFile(log), Not(HasSubstr("launcher:"))) << flags;
  }
}

}  // namespace
}  // namespace pipeline
