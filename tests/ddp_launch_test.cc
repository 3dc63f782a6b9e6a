// `train` with the ddp strategy, as a user starts it: the built-in launcher
// runs two worker processes that rendezvous over loopback, train, and report
// once; when a worker dies, the others are stopped and the launcher names it.

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/background_process.h"
#include "pipeline/testing/free_port.h"
#include "pipeline/testing/small_cnn_run.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadFile;

std::string WriteConfig(const std::string& name, int max_steps) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::create_directories(dir);
  const std::string path = absl::StrCat(dir, "/config_", ::getpid(), ".textproto");
  std::ofstream(path) << absl::StrCat(R"pb(
    model { name: "small_cnn" }
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
  // One short header for the job, from rank 0.
  size_t headers = 0;
  for (size_t at = output.find("the resolved config (every default filled in) is saved as ");
       at != std::string::npos;
       at = output.find("the resolved config (every default filled in) is saved as ", at + 1)) {
    ++headers;
  }
  EXPECT_EQ(headers, 1u) << output;
  EXPECT_THAT(output, HasSubstr("strategy ddp, world size 2"));
}

// The pid of `rank`'s worker as the launcher of `run` printed it.
pid_t WorkerPid(const testing::BackgroundProcess& run, int rank) {
  const std::optional<pid_t> pid = testing::LauncherWorkerPid(run.Output(), rank);
  EXPECT_TRUE(pid.has_value()) << run.Output();
  return pid.value_or(-1);
}

// Every wait below is for an event (a log line, an exit), never a deadline:
// how fast the workers train depends on how busy the machine is, and the
// test's timeout is the backstop for a hang.
TEST(DdpLaunchTest, ADeadWorkerStopsTheOthersAndIsNamed) {
  const std::string config = WriteConfig("ddp_kill", 100000);
  testing::BackgroundProcess run({"tools/train", "--config=" + config},
                                 ::testing::TempDir() + "/ddp_kill/log");
  ASSERT_TRUE(run.WaitForOutput("step 2/")) << run.Output();
  const pid_t rank1 = WorkerPid(run, 1);
  ASSERT_EQ(::kill(rank1, SIGKILL), 0);
  EXPECT_EQ(run.Wait(), 1) << run.Output();
  EXPECT_THAT(run.Output(), HasSubstr("was killed by signal 9 (Killed); stopped the other workers"));
  EXPECT_THAT(run.Output(), HasSubstr(absl::StrCat("error: rank 1 (pid ", rank1, ")")));
  EXPECT_FALSE(testing::ProcessIsAlive(WorkerPid(run, 0)));
}

TEST(DdpLaunchTest, UnderMaxRestartsAKilledWorkerIsReplacedAndTheJobFinishes) {
  const std::string config = WriteConfig("ddp_restart", 40);
  testing::BackgroundProcess run(
      {"tools/train", "--config=" + config, "--set=strategy.options.max_restarts=1",
       "--set=checkpoint.every_steps=4"},
      ::testing::TempDir() + "/ddp_restart/log");
  ASSERT_TRUE(run.WaitForOutput("step 6/")) << run.Output();
  // Held still first, so the job cannot reach its end before the kill.
  const pid_t rank1 = WorkerPid(run, 1);
  ASSERT_EQ(::kill(rank1, SIGSTOP), 0);
  ASSERT_EQ(::kill(rank1, SIGKILL), 0);
  EXPECT_EQ(run.Wait(), 0) << run.Output();
  const std::string output = run.Output();
  EXPECT_THAT(output, HasSubstr("launcher: restart 1 of 1 after: rank 1 (pid "));
  EXPECT_THAT(output, HasSubstr("resume: continuing from "));
  EXPECT_THAT(output, HasSubstr("\"steps\":40"));
}

// Two machines (two launchers with --nnodes=2 on loopback, one output_dir
// both see), max_restarts on both: the worker of node 1 is SIGKILLed, node
// 1's launcher restarts it, node 0's worker fails on the broken collective
// and its launcher restarts it as well, and the group meets again and
// finishes from the latest checkpoint.
TEST(DdpLaunchTest, TwoNodesRestartTogetherWhenAWorkerOfOneDies) {
  const std::string dir = ::testing::TempDir() + "/ddp_two_node_restart";
  std::filesystem::remove_all(dir);  // no checkpoints of an earlier run
  const std::string config = WriteConfig("ddp_two_node_restart", 40);
  const int port = testing::FreePort();
  std::vector<std::unique_ptr<testing::BackgroundProcess>> nodes;
  for (int node = 0; node < 2; ++node) {
    nodes.push_back(std::make_unique<testing::BackgroundProcess>(
        std::vector<std::string>{
            "tools/train", "--config=" + config, "--nnodes=2", "--nproc_per_node=1",
            "--master_addr=127.0.0.1", absl::StrCat("--master_port=", port),
            "--set=strategy.options.max_restarts=1",
            "--set=strategy.options.timeout_seconds=20", "--set=checkpoint.every_steps=4",
            absl::StrCat("--node_rank=", node)},
        absl::StrCat(dir, "/log", node)));
  }
  ASSERT_TRUE(nodes[0]->WaitForOutput("step 6/")) << nodes[0]->Output();
  // Held still first, so the job cannot reach its end before the kill.
  const pid_t node1_worker = WorkerPid(*nodes[1], 1);
  ASSERT_EQ(::kill(node1_worker, SIGSTOP), 0);
  ASSERT_EQ(::kill(node1_worker, SIGKILL), 0);
  const int node0_exit = nodes[0]->Wait();
  const int node1_exit = nodes[1]->Wait();
  const std::string node0 = nodes[0]->Output();
  const std::string node1 = nodes[1]->Output();
  EXPECT_EQ(node0_exit, 0) << node0;
  EXPECT_EQ(node1_exit, 0) << node1;
  EXPECT_THAT(node1, HasSubstr("launcher: restart 1 of 1 after: rank 1 (pid "));
  EXPECT_THAT(node1, HasSubstr("was killed by signal 9"));
  EXPECT_THAT(node0, HasSubstr("launcher: restart 1 of 1 after: rank 0 (pid "));
  EXPECT_THAT(node0, HasSubstr("resume: continuing from "));
  EXPECT_THAT(node0, HasSubstr("\"steps\":40"));
}

// A peer that stops without dying (SIGSTOP) must not hang the job: rank 0's
// collective times out after timeout_seconds and the launcher ends it all.
TEST(DdpLaunchTest, AHungPeerEndsTheJobAfterTheTimeout) {
  const std::string config = WriteConfig("ddp_hung", 100000);
  testing::BackgroundProcess run(
      {"tools/train", "--config=" + config, "--set=strategy.options.timeout_seconds=5"},
      ::testing::TempDir() + "/ddp_hung/log");
  ASSERT_TRUE(run.WaitForOutput("step 2/")) << run.Output();
  const pid_t rank1 = WorkerPid(run, 1);
  ASSERT_EQ(::kill(rank1, SIGSTOP), 0);
  EXPECT_NE(run.Wait(), 0);
  // Never leave a stopped process behind, whatever happened.
  if (testing::ProcessIsAlive(rank1)) ::kill(rank1, SIGKILL);
  const std::string output = run.Output();
  // The collective that timed out is named with the runner's own bound, and
  // the final line names the rank that hung it: the launcher saw it stop.
  // (Gloo's own words differ between versions: "Timed out waiting 5000ms"
  // in LibTorch 1.13's, "Operation timed out!" in 2.6's.)
  EXPECT_THAT(output, HasSubstr("(waited up to timeout_seconds: 5); this is collective number"));
  EXPECT_THAT(output, HasSubstr("launcher: rank 1 (pid "));
  std::string last_error;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (absl::StartsWith(line, "error: ")) last_error = std::string(line);
  }
  EXPECT_THAT(last_error, HasSubstr("error: rank 0 (pid ")) << output;
  EXPECT_THAT(last_error, HasSubstr(absl::StrCat(" while rank 1 (pid ", rank1, ")"))) << output;
  EXPECT_THAT(last_error, HasSubstr("was stopped by signal 19 (Stopped (signal))")) << output;
  EXPECT_THAT(last_error, HasSubstr("and hung the job")) << output;
}

// The config of the equivalence test: a BatchNorm-free model, so one process
// on batches of 8 and two processes on 4 + 4 of the same samples compute the
// same gradients.
std::string EquivalenceConfig(const std::string& name, const std::string& strategy) {
  const bool ddp = strategy == "ddp";
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::create_directories(dir);
  const std::string path = absl::StrCat(dir, "/config_", ::getpid(), ".textproto");
  testing::SmallCnnRun run;
  run.strategy = ddp ? testing::DdpStrategy(2) : absl::StrCat("name: \"", strategy, "\"");
  run.distributed_sampler = ddp;
  run.batch_size = ddp ? 4 : 8;
  run.output_dir = dir + "/out";
  std::ofstream(path) << testing::SmallCnnConfigText(run);
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

// Two processes (ddp) and two replicas in one process (data_parallel), each
// on halves of the batches single-device training sees whole.
TEST(DdpLaunchTest, ParallelStrategiesTrainExactlyLikeOneDeviceOnTheWholeBatch) {
  const std::vector<std::string> strategies = {"single", "ddp", "data_parallel"};
  std::vector<std::string> outputs;
  for (const std::string& strategy : strategies) {
    const std::string config = EquivalenceConfig("equal_" + strategy, strategy);
    const std::string log = ::testing::TempDir() + "/equal_" + strategy + ".log";
    const int status =
        std::system(("tools/train --config=" + config + " > " + log + " 2>&1").c_str());
    outputs.push_back(ReadFile(log));
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << outputs.back();
  }
  EXPECT_THAT(outputs[1], HasSubstr("launcher: started 2 workers"));
  for (size_t parallel = 1; parallel < strategies.size(); ++parallel) {
    for (const char* field : {"train_loss", "val_loss", "val_acc"}) {
      const std::vector<double> single = EpochValues(outputs[0], field);
      const std::vector<double> other = EpochValues(outputs[parallel], field);
      ASSERT_EQ(single.size(), 3u) << outputs[0];
      ASSERT_EQ(other.size(), 3u) << outputs[parallel];
      for (size_t epoch = 0; epoch < 3; ++epoch) {
        EXPECT_NEAR(single[epoch], other[epoch], 1e-4)
            << strategies[parallel] << ": " << field << " of epoch " << epoch + 1;
      }
    }
  }
  // It trained at all: the loss of the last epoch is below the first's.
  const std::vector<double> loss = EpochValues(outputs[0], "train_loss");
  EXPECT_LT(loss.back(), loss.front());
}

// With BatchNorm, ddp on 4 + 4 samples with sync_batch_norm against one
// process on the 8 (the same losses and accuracies, epoch by epoch), and
// without it, not.
TEST(DdpLaunchTest, SyncBatchNormTrainsLikeOneDeviceOnTheWholeBatch) {
  std::vector<std::string> outputs;
  const std::vector<std::string> strategies = {"single", "sync", "per_rank"};
  for (const std::string& strategy : strategies) {
    const std::string dir = ::testing::TempDir() + "/batch_norm_" + strategy;
    std::filesystem::create_directories(dir);
    testing::SmallCnnRun run;
    run.batch_norm = true;
    run.output_dir = dir + "/out";
    if (strategy != "single") {
      run.strategy = absl::StrCat(
          "name: \"ddp\" options { [type.googleapis.com/pipeline.DdpOptions] { nproc_per_node: 2 ",
          strategy == "sync" ? "sync_batch_norm: true" : "", " } }");
      run.distributed_sampler = true;
      run.batch_size = 4;
    }
    const std::string config = dir + "/config.textproto";
    std::ofstream(config) << testing::SmallCnnConfigText(run);
    const int status = std::system(
        ("tools/train --config=" + config + " > " + dir + "/log 2>&1").c_str());
    outputs.push_back(ReadFile(dir + "/log"));
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << outputs.back();
  }
  double per_rank_difference = 0;
  for (const char* field : {"train_loss", "val_loss"}) {
    const std::vector<double> single = EpochValues(outputs[0], field);
    const std::vector<double> sync = EpochValues(outputs[1], field);
    const std::vector<double> per_rank = EpochValues(outputs[2], field);
    ASSERT_EQ(single.size(), 3u) << outputs[0];
    ASSERT_EQ(sync.size(), 3u) << outputs[1];
    ASSERT_EQ(per_rank.size(), 3u) << outputs[2];
    for (size_t epoch = 0; epoch < 3; ++epoch) {
      EXPECT_NEAR(single[epoch], sync[epoch], 1e-4) << field << " of epoch " << epoch + 1;
      per_rank_difference = std::max(per_rank_difference, std::abs(single[epoch] - per_rank[epoch]));
    }
  }
  EXPECT_GT(per_rank_difference, 1e-3) << "per-rank BatchNorm should train another model";
}

// A ddp run of 2 x 4 stopped after 5 steps and resumed from that
// checkpoint with 1 x 8: the same global batches, so, the model being
// BatchNorm-free, the same training as the uninterrupted run, epoch by
// epoch, which only holds if the resumed epoch takes exactly the samples
// the 2 ranks had not.
TEST(DdpLaunchTest, ResumedWithAnotherWorldSizeTheEpochGoesOnWithTheSamplesNobodyTook) {
  auto config_in = [](const std::string& name) {
    const std::string dir = ::testing::TempDir() + "/reshard_" + name;
    std::filesystem::create_directories(dir);
    testing::SmallCnnRun run;
    run.strategy = testing::DdpStrategy(2);
    run.distributed_sampler = true;
    run.batch_size = 4;
    run.checkpoint = "every_steps: 5 keep_last: 0";
    run.output_dir = dir + "/out";
    std::ofstream(dir + "/config.textproto") << testing::SmallCnnConfigText(run);
    return dir;
  };
  auto train = [](const std::string& dir, const std::string& flags, const std::string& log) {
    const int status = std::system(("tools/train --config=" + dir + "/config.textproto " + flags +
                                    " > " + dir + "/" + log + " 2>&1")
                                       .c_str());
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  };
  const std::string reference = config_in("reference");
  ASSERT_TRUE(train(reference, "", "log")) << ReadFile(reference + "/log");
  const std::string resumed = config_in("resumed");
  ASSERT_TRUE(train(resumed, "--set=trainer.max_steps=6", "first_log"))
      << ReadFile(resumed + "/first_log");
  ASSERT_TRUE(train(resumed,
                    "--set=strategy.options.nproc_per_node=1 --set=train_data.batch_size=8 "
                    "--resume=" + resumed + "/out/checkpoint_step_5.pt",
                    "log"))
      << ReadFile(resumed + "/log");
  const std::string output = ReadFile(resumed + "/log");
  EXPECT_THAT(output, HasSubstr("resume: continuing from "));
  for (const char* field : {"train_loss", "val_loss", "val_acc"}) {
    const std::vector<double> expected = EpochValues(ReadFile(reference + "/log"), field);
    const std::vector<double> actual = EpochValues(output, field);
    ASSERT_EQ(expected.size(), 3u);
    ASSERT_EQ(actual.size(), 3u) << output;
    for (size_t epoch = 0; epoch < 3; ++epoch) {
      EXPECT_NEAR(expected[epoch], actual[epoch], 1e-4) << field << " of epoch " << epoch + 1;
    }
  }
}

using testing::FreePort;

struct RankRun {
  int exit_code = -1;
  std::string output;
};

// Starts one `train` per entry of `environments` (variables as a shell
// prefix, then extra flags) at the same time, as torchrun or srun would, and
// waits for all. `timeout 900` only turns a hang into a failure that shows
// the logs, far beyond what a run of four tiny steps takes on a busy machine.
std::vector<RankRun> RunRanks(const std::string& name, const std::string& config,
                              const std::vector<std::string>& environments,
                              const std::vector<std::string>& flags = {}) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::create_directories(dir);
  std::string command;
  for (size_t r = 0; r < environments.size(); ++r) {
    const std::string log = absl::StrCat(dir, "/log", r);
    command += absl::StrCat("(env ", environments[r], " timeout 900 tools/train --config=", config,
                            " ", r < flags.size() ? flags[r] : "", " > ", log, " 2>&1; echo $? > ",
                            dir, "/rc", r, ") & ");
  }
  EXPECT_NE(std::system((command + "wait").c_str()), -1) << "could not start a shell";
  std::vector<RankRun> runs(environments.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    runs[r].output = ReadFile(absl::StrCat(dir, "/log", r));
    const std::string rc = ReadFile(absl::StrCat(dir, "/rc", r));
    runs[r].exit_code = rc.empty() ? -1 : std::stoi(rc);
  }
  return runs;
}

TEST(DdpLaunchTest, TorchrunStyleVariablesGiveEachProcessItsRank) {
  const std::string config = EquivalenceConfig("torchrun_style", "ddp");
  const std::string rendezvous = absl::StrCat("WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=",
                                              FreePort(), " RANK=");
  const std::vector<RankRun> runs =
      RunRanks("torchrun_style", config + " --set=trainer.max_steps=4",
               {rendezvous + "0 LOCAL_RANK=0", rendezvous + "1 LOCAL_RANK=1"});
  ASSERT_EQ(runs[0].exit_code, 0) << runs[0].output;
  ASSERT_EQ(runs[1].exit_code, 0) << runs[1].output;
  EXPECT_THAT(runs[0].output, HasSubstr("\"steps\":4"));
  EXPECT_THAT(runs[0].output, Not(HasSubstr("launcher:")));
  // Only rank 0 reports.
  EXPECT_THAT(runs[1].output, Not(HasSubstr("{\"event\":\"summary\"")));
}

TEST(DdpLaunchTest, SlurmVariablesAloneGiveEachProcessItsRank) {
  const std::string config = EquivalenceConfig("slurm_style", "ddp");
  const std::string job = absl::StrCat("SLURM_NTASKS=2 SLURM_JOB_NODELIST=localhost MASTER_PORT=",
                                       FreePort(), " SLURM_PROCID=");
  const std::vector<RankRun> runs =
      RunRanks("slurm_style", config + " --set=trainer.max_steps=4",
               {job + "0 SLURM_LOCALID=0", job + "1 SLURM_LOCALID=1"});
  ASSERT_EQ(runs[0].exit_code, 0) << runs[0].output;
  ASSERT_EQ(runs[1].exit_code, 0) << runs[1].output;
  EXPECT_THAT(runs[0].output, HasSubstr("\"steps\":4"));
  EXPECT_THAT(runs[1].output, Not(HasSubstr("{\"event\":\"summary\"")));
}

// Two machines, simulated by two launchers on loopback: each starts its
// node's worker, and the two workers form one job of world size 2.
TEST(DdpLaunchTest, TwoNodesFormOneJob) {
  const std::string config = EquivalenceConfig("two_nodes", "ddp");
  const std::string common = absl::StrCat(
      "--nnodes=2 --nproc_per_node=1 --master_addr=127.0.0.1 --master_port=", FreePort(),
      " --set=trainer.max_steps=4 --node_rank=");
  const std::vector<RankRun> runs =
      RunRanks("two_nodes", config, {"", ""}, {common + "0", common + "1"});
  ASSERT_EQ(runs[0].exit_code, 0) << runs[0].output;
  ASSERT_EQ(runs[1].exit_code, 0) << runs[1].output;
  EXPECT_THAT(runs[0].output, HasSubstr("(ranks 0-0 of 2)"));
  EXPECT_THAT(runs[1].output, HasSubstr("(ranks 1-1 of 2)"));
  EXPECT_THAT(runs[0].output, HasSubstr("\"steps\":4"));
  // Validation covers the whole set once across both machines.
  EXPECT_THAT(runs[0].output, HasSubstr("(30 samples)"));
}

// A rendezvous host that does not resolve is an error within seconds that
// names the host and where it came from, not a retry loop until the
// timeout. (".invalid" never resolves, RFC 2606.)
TEST(DdpLaunchTest, AMasterAddressThatDoesNotResolveIsNamedWithItsSource) {
  const std::string config = EquivalenceConfig("unresolvable", "ddp");
  const std::string port = absl::StrCat(" MASTER_PORT=", FreePort());
  const std::vector<RankRun> runs = RunRanks(
      "unresolvable", config,
      {"RANK=0 WORLD_SIZE=2 MASTER_ADDR=no-such-host.invalid" + port,
       "SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_JOB_NODELIST=nowhere.invalid" + port});
  EXPECT_EQ(runs[0].exit_code, 2) << runs[0].output;
  EXPECT_THAT(runs[0].output,
              HasSubstr("the rendezvous host \"no-such-host.invalid\" (from MASTER_ADDR) does "
                        "not resolve"));
  EXPECT_EQ(runs[1].exit_code, 2) << runs[1].output;
  EXPECT_THAT(runs[1].output,
              HasSubstr("the rendezvous host \"nowhere.invalid\" (from the first host of "
                        "SLURM_JOB_NODELIST=nowhere.invalid) does not resolve"));
  // The launcher checks its flag before it starts any worker.
  const std::vector<RankRun> launched = RunRanks(
      "unresolvable_launcher", config, {""},
      {absl::StrCat("--nnodes=2 --node_rank=1 --master_addr=no-such-host.invalid --master_port=",
                    FreePort())});
  EXPECT_EQ(launched[0].exit_code, 2) << launched[0].output;
  EXPECT_THAT(launched[0].output,
              HasSubstr("the rendezvous host \"no-such-host.invalid\" (from --master_addr) does "
                        "not resolve"));
  EXPECT_THAT(launched[0].output, Not(HasSubstr("launcher: started")));
}

TEST(DdpLaunchTest, RanksWithDifferentConfigsAreStoppedAtTheStart) {
  const std::string config = EquivalenceConfig("config_mismatch", "ddp");
  const std::string rendezvous = absl::StrCat("WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=",
                                              FreePort(), " RANK=");
  const std::vector<RankRun> runs =
      RunRanks("config_mismatch", config, {rendezvous + "0", rendezvous + "1"},
               {"", "--set=trainer.seed=8"});
  for (const RankRun& run : runs) {
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_THAT(run.output, HasSubstr("the resolved config of rank 1 differs from rank 0's; "
                                      "start every rank with the same config file and --set "
                                      "flags"));
  }
}

TEST(DdpLaunchTest, APortInUseIsNamed) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  const int port = ntohs(address.sin_port);
  const std::string config = EquivalenceConfig("port_in_use", "ddp");
  const std::vector<RankRun> runs = RunRanks(
      "port_in_use", config,
      {absl::StrCat("RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=", port)});
  close(fd);
  EXPECT_EQ(runs[0].exit_code, 2);
  EXPECT_THAT(runs[0].output, HasSubstr(absl::StrCat("127.0.0.1:", port)));
  EXPECT_THAT(runs[0].output,
              HasSubstr(absl::StrCat("Another process holds port ", port,
                                     ": choose a free one with MASTER_PORT (or train "
                                     "--master_port)")));
}

}  // namespace
}  // namespace pipeline
