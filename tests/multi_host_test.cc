// ddp across several hosts on a real network path. Each host is a network
// namespace with one link to a switch (pipeline/testing/test_network.h); on
// each, `train` is started as a user starts it on every machine of a job
// (--nnodes, --node_rank, --master_addr = host 0's address), with
// GLOO_SOCKET_IFNAME naming the host's link, so every byte between ranks of
// different hosts crosses the network. The cases: jobs of 2 and 3 hosts
// train exactly like one process; a cut link fails the job with an error
// naming the collective and the timeout, and under max_restarts the job
// resumes once the link is back and loses nothing; a lossy, slow link only
// makes it slower; a wrong or unresolvable master address is a clear error.
//
// Nothing waits on a clock: each step waits for a line in a log or for a
// process to exit (Bazel's timeout is the backstop for a hang), so the test
// passes on a busy machine as on an idle one. The durations it prints are
// for the reader.

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/background_process.h"
#include "pipeline/testing/command.h"
#include "pipeline/testing/same_weights.h"
#include "pipeline/testing/test_network.h"
#include "pipeline/testing/small_cnn_run.h"

namespace pipeline {
namespace {

using ::pipeline::testing::BackgroundProcess;
using ::pipeline::testing::ExpectSameModel;
using ::pipeline::testing::RunCommand;
using ::pipeline::testing::TestNetwork;
using ::testing::AnyOf;
using ::testing::HasSubstr;

// Inside the namespaces nothing else listens, so any port will do.
constexpr int kMasterPort = 29500;

// A folder of its own for each run; the process id keeps two copies of the
// suite apart (the Debian 13 root's has the same temporary paths), and an
// earlier run's checkpoints are removed, or --resume=auto would find them.
std::string RunDir(const std::string& name) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/multi_host_", ::getpid(), "/", name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// small_cnn without BatchNorm on 8x8 synthetic images, deterministic: with
// `ddp`, each rank takes 4 samples a step; with `single`, one process takes
// `batch_size` (4 x the ranks) and computes the same gradients. The run
// writes one checkpoint, at its end (checkpoint_epoch_<epochs>.pt).
std::string WriteConfig(const std::string& dir, const std::string& strategy, int batch_size,
                        int epochs) {
  const std::string path = dir + "/config.textproto";
  testing::SmallCnnRun run;
  run.strategy = absl::StrCat("name: \"", strategy, "\"");
  run.distributed_sampler = strategy == "ddp";
  run.batch_size = batch_size;
  run.trainer = absl::StrCat("epochs: ", epochs, " seed: 7 log_interval: 1 deterministic: true");
  run.checkpoint = absl::StrCat("every_epochs: ", epochs);
  run.output_dir = dir + "/out";
  std::ofstream(path) << testing::SmallCnnConfigText(run);
  return path;
}

std::string FinalCheckpoint(const std::string& dir, int epochs) {
  return absl::StrCat(dir, "/out/checkpoint_epoch_", epochs, ".pt");
}

// One `train` launcher per entry of `hosts` (the host it runs on), node
// ranks in that order, as a user starts one on every machine. Logs go to
// <dir>/log<node rank>.
std::vector<std::unique_ptr<BackgroundProcess>> StartNodes(
    const TestNetwork& network, const std::vector<int>& hosts, const std::string& dir,
    const std::string& config, int nproc_per_node, const std::string& master_addr,
    const std::vector<std::string>& flags = {}) {
  std::vector<std::unique_ptr<BackgroundProcess>> nodes;
  for (size_t node = 0; node < hosts.size(); ++node) {
    std::vector<std::string> argv = {"/usr/bin/env"};
    // Over loopback every rank is on one host and Gloo stays on lo.
    if (master_addr != "127.0.0.1") {
      argv.push_back("GLOO_SOCKET_IFNAME=" + TestNetwork::Interface());
    }
    for (const std::string& arg :
         {std::string("tools/train"), "--config=" + config,
          absl::StrCat("--nnodes=", hosts.size()),
          absl::StrCat("--nproc_per_node=", nproc_per_node), "--master_addr=" + master_addr,
          absl::StrCat("--master_port=", kMasterPort), absl::StrCat("--node_rank=", node)}) {
      argv.push_back(arg);
    }
    argv.insert(argv.end(), flags.begin(), flags.end());
    nodes.push_back(std::make_unique<BackgroundProcess>(network.OnHost(hosts[node], argv),
                                                        absl::StrCat(dir, "/log", node)));
  }
  return nodes;
}

// The same as StartNodes under the real torchrun (tools/torchrun, Debian's
// python3-torch), one worker a host, its static rendezvous at
// `master_addr`.
std::vector<std::unique_ptr<BackgroundProcess>> StartTorchrunNodes(
    const TestNetwork& network, const std::vector<int>& hosts, const std::string& dir,
    const std::string& config, const std::string& master_addr) {
  std::vector<std::unique_ptr<BackgroundProcess>> nodes;
  for (size_t node = 0; node < hosts.size(); ++node) {
    const std::vector<std::string> argv = {
        "/usr/bin/env", "GLOO_SOCKET_IFNAME=" + TestNetwork::Interface(), "tools/torchrun",
        "--no_python", absl::StrCat("--nnodes=", hosts.size()), "--nproc_per_node=1",
        absl::StrCat("--node_rank=", node), "--master_addr=" + master_addr,
        absl::StrCat("--master_port=", kMasterPort), "tools/train", "--config=" + config};
    nodes.push_back(std::make_unique<BackgroundProcess>(network.OnHost(hosts[node], argv),
                                                        absl::StrCat(dir, "/log", node)));
  }
  return nodes;
}

bool TorchrunInstalled() {
  return RunCommand("/usr/bin/python3 -c 'import torch.distributed.run'").exit_code == 0;
}

std::vector<int> WaitForAll(std::vector<std::unique_ptr<BackgroundProcess>>& nodes) {
  std::vector<int> exit_codes;
  for (auto& node : nodes) exit_codes.push_back(node->Wait());
  return exit_codes;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void Report(const std::string& text) { std::cout << "multi_host_test: " << text << std::endl; }

// The value of `field` in each epoch event of a run's output, by epoch. An
// epoch reported again (after a restart that resumed from a checkpoint
// before the end of an epoch already reported) counts with its last report.
std::map<int, double> EpochValues(const std::string& output, const std::string& field) {
  std::map<int, double> values;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    constexpr absl::string_view kPrefix = "{\"event\":\"epoch\",\"epoch\":";
    if (!absl::StartsWith(line, kPrefix)) continue;
    const int epoch = std::stoi(std::string(line.substr(kPrefix.size())));
    const size_t at = line.find("\"" + field + "\":");
    if (at == absl::string_view::npos) continue;
    values[epoch] = std::stod(std::string(line.substr(at + field.size() + 3)));
  }
  return values;
}

// Every epoch's training loss, validation loss and accuracy of `actual`
// within `tolerance` of `expected`'s (0: equal).
void ExpectSameEpochs(const std::string& expected, const std::string& actual, int epochs,
                      double tolerance) {
  for (const char* field : {"train_loss", "val_loss", "val_acc"}) {
    const std::map<int, double> want = EpochValues(expected, field);
    const std::map<int, double> got = EpochValues(actual, field);
    ASSERT_EQ(want.size(), static_cast<size_t>(epochs)) << expected;
    ASSERT_EQ(got.size(), static_cast<size_t>(epochs)) << actual;
    for (const auto& [epoch, value] : want) {
      if (tolerance == 0) {
        EXPECT_EQ(got.at(epoch), value) << field << " of epoch " << epoch;
      } else {
        EXPECT_NEAR(got.at(epoch), value, tolerance) << field << " of epoch " << epoch;
      }
    }
  }
}

// The lines of a launcher's output that report an error: its own
// ("error: ...") and its workers' ("[rank N] error: ...").
std::string ErrorLines(const std::string& output) {
  std::string lines;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (absl::StartsWith(line, "error: ") || absl::StrContains(line, "] error: ")) {
      absl::StrAppend(&lines, line, "\n");
    }
  }
  return lines;
}

// Two hosts train exactly as two ranks on one machine do, and like one
// process on the whole batch.
TEST(MultiHostTest, TwoHostsTrainLikeOneProcessOnTheWholeBatch) {
  auto network = TestNetwork::Create(2);
  if (absl::IsUnavailable(network.status())) GTEST_SKIP() << network.status().message();
  ASSERT_TRUE(network.ok()) << network.status();

  const std::string single_dir = RunDir("two_hosts_single");
  const testing::CommandResult single =
      RunCommand("tools/train --config=" + WriteConfig(single_dir, "single", 8, 3));
  ASSERT_EQ(single.exit_code, 0) << single.output;

  // The same job on one machine: both launchers on host 0, over its
  // loopback.
  const std::string loopback_dir = RunDir("two_hosts_loopback");
  auto loopback = StartNodes(**network, {0, 0}, loopback_dir,
                             WriteConfig(loopback_dir, "ddp", 4, 3), 1, "127.0.0.1");
  EXPECT_EQ(WaitForAll(loopback), std::vector<int>({0, 0})) << loopback[0]->Output();

  const std::string dir = RunDir("two_hosts");
  const auto start = std::chrono::steady_clock::now();
  auto nodes = StartNodes(**network, {0, 1}, dir, WriteConfig(dir, "ddp", 4, 3), 1,
                          (*network)->Address(0));
  const std::vector<int> exit_codes = WaitForAll(nodes);
  Report(absl::StrFormat("2 hosts, 3 epochs: %.1f s", SecondsSince(start)));
  const std::string host0 = nodes[0]->Output();
  const std::string host1 = nodes[1]->Output();
  ASSERT_EQ(exit_codes[0], 0) << host0;
  ASSERT_EQ(exit_codes[1], 0) << host1;
  EXPECT_THAT(host0, HasSubstr("launcher: started 1 workers (ranks 0-0 of 2), rendezvous at "
                               "10.213.0.1:29500"));
  EXPECT_THAT(host1, HasSubstr("launcher: started 1 workers (ranks 1-1 of 2), rendezvous at "
                               "10.213.0.1:29500"));
  EXPECT_THAT(host0, HasSubstr("(30 samples)"));
  EXPECT_THAT(host0, HasSubstr("\"steps\":36"));
  ExpectSameEpochs(loopback[0]->Output(), host0, 3, 0);
  ExpectSameModel(FinalCheckpoint(loopback_dir, 3), FinalCheckpoint(dir, 3));
  ExpectSameEpochs(single.output, host0, 3, 1e-4);

  // The same two hosts started by the real torchrun: the same epochs and
  // weights as train's own launchers.
  if (!TorchrunInstalled()) {
    Report("torchrun part skipped: python3-torch (torchrun) is not installed");
    return;
  }
  const std::string torchrun_dir = RunDir("two_hosts_torchrun");
  const auto torchrun_start = std::chrono::steady_clock::now();
  auto torchrun = StartTorchrunNodes(**network, {0, 1}, torchrun_dir,
                                     WriteConfig(torchrun_dir, "ddp", 4, 3),
                                     (*network)->Address(0));
  const std::vector<int> torchrun_exits = WaitForAll(torchrun);
  Report(absl::StrFormat("2 hosts under torchrun, 3 epochs: %.1f s",
                         SecondsSince(torchrun_start)));
  ASSERT_EQ(torchrun_exits[0], 0) << torchrun[0]->Output();
  ASSERT_EQ(torchrun_exits[1], 0) << torchrun[1]->Output();
  ExpectSameEpochs(loopback[0]->Output(), torchrun[0]->Output(), 3, 0);
  ExpectSameModel(FinalCheckpoint(loopback_dir, 3), FinalCheckpoint(torchrun_dir, 3));
}

// Three hosts of two workers each: every rank has a peer on its own host
// and four on the others.
TEST(MultiHostTest, ThreeHostsOfTwoWorkersTrainLikeOneProcessOnTheWholeBatch) {
  auto network = TestNetwork::Create(3);
  if (absl::IsUnavailable(network.status())) GTEST_SKIP() << network.status().message();
  ASSERT_TRUE(network.ok()) << network.status();

  const std::string single_dir = RunDir("three_hosts_single");
  const testing::CommandResult single =
      RunCommand("tools/train --config=" + WriteConfig(single_dir, "single", 24, 3));
  ASSERT_EQ(single.exit_code, 0) << single.output;

  const std::string dir = RunDir("three_hosts");
  const auto start = std::chrono::steady_clock::now();
  auto nodes = StartNodes(**network, {0, 1, 2}, dir, WriteConfig(dir, "ddp", 4, 3), 2,
                          (*network)->Address(0));
  const std::vector<int> exit_codes = WaitForAll(nodes);
  Report(absl::StrFormat("3 hosts x 2 workers, 3 epochs: %.1f s", SecondsSince(start)));
  for (int host = 0; host < 3; ++host) {
    const std::string output = nodes[host]->Output();
    ASSERT_EQ(exit_codes[host], 0) << output;
    EXPECT_THAT(output, HasSubstr(absl::StrCat("launcher: started 2 workers (ranks ", 2 * host,
                                               "-", 2 * host + 1, " of 6)")));
  }
  const std::string host0 = nodes[0]->Output();
  EXPECT_THAT(host0, HasSubstr("(30 samples)"));
  EXPECT_THAT(host0, HasSubstr("\"steps\":12"));
  ExpectSameEpochs(single.output, host0, 3, 1e-4);
}

// Host 1's cable is pulled in the middle of training: the rank on the other
// side of it fails after timeout_seconds with an error naming the
// collective it was in and where rank 1 was, and both jobs end.
TEST(MultiHostTest, ACutLinkFailsTheCollectiveNamingItAndTheTimeout) {
  auto network = TestNetwork::Create(2);
  if (absl::IsUnavailable(network.status())) GTEST_SKIP() << network.status().message();
  ASSERT_TRUE(network.ok()) << network.status();

  const std::string dir = RunDir("cut_link");
  auto nodes = StartNodes(**network, {0, 1}, dir, WriteConfig(dir, "ddp", 4, 100000), 1,
                          (*network)->Address(0), {"--set=strategy.options.timeout_seconds=5"});
  ASSERT_TRUE(nodes[0]->WaitForOutput("step 4/")) << nodes[0]->Output();
  ASSERT_TRUE((*network)->SetLinkUp(1, false).ok());
  const auto cut = std::chrono::steady_clock::now();
  const int host0_exit = nodes[0]->Wait();
  const double host0_seconds = SecondsSince(cut);
  const int host1_exit = nodes[1]->Wait();
  Report(absl::StrFormat(
      "link of host 1 cut (timeout 5 s): host 0 exited %.1f s later, host 1 %.1f s later",
      host0_seconds, SecondsSince(cut)));
  const std::string host0 = nodes[0]->Output();
  const std::string host1 = nodes[1]->Output();
  Report("link cut, host 0 says:\n" + ErrorLines(host0) + "host 1 says:\n" + ErrorLines(host1));
  EXPECT_EQ(host0_exit, 1) << host0;
  EXPECT_EQ(host1_exit, 1) << host1;
  // The collective (a gradient bucket's all-reduce, or the vote each step
  // takes on non-finite losses, or a sum of figures: where the cut finds
  // the ranks) and the timeout.
  const std::regex named(
      "\\[rank 0\\] error: ddp: [^\\n]*(all-reduce of gradient bucket [0-9]+ of [0-9]+|"
      "the non-finite loss vote|sum of the [a-z' ]+): [^\\n]*\\(waited up to timeout_seconds: 5\\)");
  EXPECT_TRUE(std::regex_search(host0, named)) << host0;
  // Rank 0 names rank 1 as cut off, with its address: its heartbeat in
  // the store (on rank 0's host) stopped moving.
  EXPECT_THAT(ErrorLines(host0),
              HasSubstr(absl::StrCat("rank 1 (on ", (*network)->Address(1),
                                     ") has not been heard from for 1.5 s: its host is "
                                     "unreachable from the store's, or the process is stopped")));
  EXPECT_THAT(host0, HasSubstr("error: rank 0 (pid "));
  // Rank 1, cut off from the store on host 0, names where the store is.
  EXPECT_THAT(host1, HasSubstr("[rank 1] error: ddp: "));
  EXPECT_THAT(host1, HasSubstr("(waited up to timeout_seconds: 5)"));
  const std::string store = absl::StrCat("the store at ", (*network)->Address(0), ":", kMasterPort);
  EXPECT_THAT(host1, AnyOf(HasSubstr(store + " (rank 0's host) did not answer"),
                           HasSubstr(store + " could not say")));
  EXPECT_THAT(host1, HasSubstr("error: rank 1 (pid "));
}

// The same cut under max_restarts: once the failure is reported the cable
// goes back in, both launchers restart their workers from the latest
// checkpoint, and the job ends exactly as one that was never cut.
TEST(MultiHostTest, UnderMaxRestartsAJobWhoseLinkWasCutResumesAndLosesNothing) {
  auto network = TestNetwork::Create(2);
  if (absl::IsUnavailable(network.status())) GTEST_SKIP() << network.status().message();
  ASSERT_TRUE(network.ok()) << network.status();
  constexpr int kEpochs = 10;  // 120 steps: enough to cut the link at step 4
  // The restarted rank 0 waits timeout_seconds for rank 1 at the
  // rendezvous, and rank 1's worker needs up to 5 s more to give up on the
  // store of the rank 0 that is gone: 10 s leaves room for both.
  const std::vector<std::string> flags = {"--set=strategy.options.timeout_seconds=10",
                                          "--set=strategy.options.max_restarts=2",
                                          "--set=checkpoint.every_steps=2"};

  const std::string clean_dir = RunDir("restart_clean");
  auto start = std::chrono::steady_clock::now();
  auto clean = StartNodes(**network, {0, 1}, clean_dir,
                          WriteConfig(clean_dir, "ddp", 4, kEpochs), 1, (*network)->Address(0),
                          flags);
  ASSERT_EQ(WaitForAll(clean), std::vector<int>({0, 0})) << clean[0]->Output();
  const double clean_seconds = SecondsSince(start);

  const std::string dir = RunDir("restart_cut");
  start = std::chrono::steady_clock::now();
  auto nodes = StartNodes(**network, {0, 1}, dir, WriteConfig(dir, "ddp", 4, kEpochs), 1,
                          (*network)->Address(0), flags);
  ASSERT_TRUE(nodes[0]->WaitForOutput("step 4/")) << nodes[0]->Output();
  ASSERT_TRUE((*network)->SetLinkUp(1, false).ok());
  const auto cut = std::chrono::steady_clock::now();
  const bool restarted = nodes[0]->WaitForOutput("launcher: restart");
  const double until_restart = SecondsSince(cut);
  ASSERT_TRUE((*network)->SetLinkUp(1, true).ok());
  ASSERT_TRUE(restarted) << nodes[0]->Output();
  const auto restored = std::chrono::steady_clock::now();
  const std::vector<int> exit_codes = WaitForAll(nodes);
  Report(absl::StrFormat(
      "link cut at step 4: restart reported %.1f s after the cut; link back, the job finished "
      "%.1f s later; %.1f s in all, against %.1f s for the same job never cut",
      until_restart, SecondsSince(restored), SecondsSince(start), clean_seconds));
  const std::string host0 = nodes[0]->Output();
  const std::string host1 = nodes[1]->Output();
  for (absl::string_view line : absl::StrSplit(host0, '\n')) {
    if (absl::StrContains(line, "launcher: restart") || absl::StrContains(line, "resume: ")) {
      Report(std::string(line));
    }
  }
  ASSERT_EQ(exit_codes[0], 0) << host0;
  ASSERT_EQ(exit_codes[1], 0) << host1;
  EXPECT_THAT(host0, HasSubstr("launcher: restart 1 of 2 after: rank 0 (pid "));
  EXPECT_THAT(host1, HasSubstr("launcher: restart 1 of 2 after: rank 1 (pid "));
  EXPECT_THAT(host0, HasSubstr("resume: continuing from "));
  EXPECT_THAT(host0, HasSubstr("\"steps\":120"));
  ExpectSameEpochs(clean[0]->Output(), host0, kEpochs, 0);
  ExpectSameModel(FinalCheckpoint(clean_dir, kEpochs), FinalCheckpoint(dir, kEpochs));
}

// An elastic job (--nnodes=2:3) on three hosts; host 2's cable is pulled
// for good in the middle of training. Hosts 0 and 1 fail on the collective
// after timeout_seconds, meet in rendezvous round 1 without host 2 (after
// the last call), and finish the job as a world of two from the latest
// checkpoint. Host 2's launcher cannot reach the rendezvous any more and
// ends with an error.
TEST(MultiHostTest, AnElasticJobGoesOnWithoutAHostWhoseLinkIsGone) {
  auto network = TestNetwork::Create(3);
  if (absl::IsUnavailable(network.status())) GTEST_SKIP() << network.status().message();
  ASSERT_TRUE(network.ok()) << network.status();
  // 2 workers a host, 4 samples each: 4 steps an epoch as 6 ranks, 6 as 4.
  constexpr int kEpochs = 10;
  const std::string dir = RunDir("elastic");
  const std::string config = WriteConfig(dir, "ddp", 4, kEpochs);
  std::vector<std::unique_ptr<BackgroundProcess>> nodes;
  const auto start = std::chrono::steady_clock::now();
  for (int host = 0; host < 3; ++host) {
    // The guests (not on master_addr's host) wait for the host's store.
    nodes.push_back(std::make_unique<BackgroundProcess>(
        (*network)->OnHost(
            host, {"/usr/bin/env", "GLOO_SOCKET_IFNAME=" + TestNetwork::Interface(),
                   "tools/train", "--config=" + config, "--nnodes=2:3",
                   "--master_addr=" + (*network)->Address(0),
                   absl::StrCat("--master_port=", kMasterPort), "--rdzv_last_call_timeout=20",
                   "--set=strategy.options.timeout_seconds=10",
                   "--set=strategy.options.max_restarts=1", "--set=checkpoint.every_steps=2"}),
        absl::StrCat(dir, "/log", host)));
  }
  ASSERT_TRUE(nodes[0]->WaitForOutput("step 4/")) << nodes[0]->Output();
  ASSERT_TRUE((*network)->SetLinkUp(2, false).ok());
  const auto cut = std::chrono::steady_clock::now();
  const int host0_exit = nodes[0]->Wait();
  const int host1_exit = nodes[1]->Wait();
  Report(absl::StrFormat("elastic, host 2 cut at step 4: hosts 0 and 1 finished %.1f s after "
                         "the cut, %.1f s in all",
                         SecondsSince(cut), SecondsSince(start)));
  const std::string host0 = nodes[0]->Output();
  const std::string host1 = nodes[1]->Output();
  for (absl::string_view line : absl::StrSplit(host0, '\n')) {
    if (absl::StartsWith(line, "launcher: ")) Report(std::string(line));
  }
  ASSERT_EQ(host0_exit, 0) << host0;
  ASSERT_EQ(host1_exit, 0) << host1;
  EXPECT_THAT(host0, HasSubstr("launcher: hosting the elastic rendezvous"));
  EXPECT_THAT(host0, HasSubstr("launcher: rendezvous round 0: 3 nodes, this one is node 0"));
  EXPECT_THAT(host0, HasSubstr("launcher: rendezvous round 1: 2 nodes, this one is node 0"));
  EXPECT_THAT(host1, HasSubstr("launcher: rendezvous round 1: 2 nodes, this one is node 1"));
  EXPECT_THAT(host0, HasSubstr("resume: continuing from "));
  EXPECT_THAT(host0, HasSubstr("launcher: started 2 workers (ranks 0-1 of 4)"));
  EXPECT_THAT(host1, HasSubstr("launcher: started 2 workers (ranks 2-3 of 4)"));
  EXPECT_THAT(host0, HasSubstr("\"epochs\":10,\"steps\":60"));
  // Host 2's machine is written off (its launcher waits on a rendezvous it
  // cannot reach, up to the store's timeout).
  ASSERT_TRUE(nodes[2]->Signal(SIGKILL));
  nodes[2]->Wait();
  ASSERT_TRUE((*network)->SetLinkUp(2, true).ok());
}

// Every host's link loses 1% of what it sends and is slow: the job takes
// longer and trains bitwise the same.
TEST(MultiHostTest, ALossySlowLinkOnlyMakesTheJobSlower) {
  auto network = TestNetwork::Create(2);
  if (absl::IsUnavailable(network.status())) GTEST_SKIP() << network.status().message();
  ASSERT_TRUE(network.ok()) << network.status();

  const std::string clean_dir = RunDir("degraded_clean");
  auto start = std::chrono::steady_clock::now();
  auto clean = StartNodes(**network, {0, 1}, clean_dir, WriteConfig(clean_dir, "ddp", 4, 3), 1,
                          (*network)->Address(0));
  ASSERT_EQ(WaitForAll(clean), std::vector<int>({0, 0})) << clean[0]->Output();
  const double clean_seconds = SecondsSince(start);

  for (int host = 0; host < 2; ++host) {
    auto applied = (*network)->DegradeLink(host);
    if (absl::IsUnavailable(applied.status())) GTEST_SKIP() << applied.status().message();
    ASSERT_TRUE(applied.ok()) << applied.status();
    Report(absl::StrCat("host ", host, "'s link: ", *applied));
  }
  const std::string dir = RunDir("degraded");
  start = std::chrono::steady_clock::now();
  auto nodes = StartNodes(**network, {0, 1}, dir, WriteConfig(dir, "ddp", 4, 3), 1,
                          (*network)->Address(0));
  const std::vector<int> exit_codes = WaitForAll(nodes);
  Report(absl::StrFormat("2 hosts, 3 epochs: %.1f s on clean links, %.1f s on degraded ones",
                         clean_seconds, SecondsSince(start)));
  for (int host = 0; host < 2; ++host) {
    // What the rule dropped and the token bucket held back.
    auto counters = (*network)->RunOnHost(
        host, absl::StrCat("sh -c 'nft list ruleset; tc -s qdisc show dev ",
                           TestNetwork::Interface(), "'"));
    Report(absl::StrCat("host ", host, " after the run:\n",
                        counters.ok() ? *counters : counters.status().ToString()));
  }
  const std::string host0 = nodes[0]->Output();
  ASSERT_EQ(exit_codes[0], 0) << host0;
  ASSERT_EQ(exit_codes[1], 0) << nodes[1]->Output();
  ExpectSameEpochs(clean[0]->Output(), host0, 3, 0);
  ExpectSameModel(FinalCheckpoint(clean_dir, 3), FinalCheckpoint(dir, 3));
}

// --master_addr is an address on the hosts' subnet that no host has: every
// node fails at the rendezvous, naming it, after timeout_seconds.
TEST(MultiHostTest, AMasterAddressNoHostHasIsARendezvousError) {
  auto network = TestNetwork::Create(2);
  if (absl::IsUnavailable(network.status())) GTEST_SKIP() << network.status().message();
  ASSERT_TRUE(network.ok()) << network.status();

  const std::string dir = RunDir("wrong_master");
  const std::string master = (*network)->UnusedAddress();
  const auto start = std::chrono::steady_clock::now();
  auto nodes = StartNodes(**network, {0, 1}, dir, WriteConfig(dir, "ddp", 4, 3), 1, master,
                          {"--set=strategy.options.timeout_seconds=3"});
  const std::vector<int> exit_codes = WaitForAll(nodes);
  Report(absl::StrFormat("master %s (no such host): both nodes failed within %.1f s", master,
                         SecondsSince(start)));
  for (int node = 0; node < 2; ++node) {
    const std::string output = nodes[node]->Output();
    Report(absl::StrCat("wrong master, node ", node, " says:\n", ErrorLines(output)));
    EXPECT_EQ(exit_codes[node], 1) << output;
    EXPECT_THAT(ErrorLines(output),
                HasSubstr(absl::StrCat("[rank ", node, "] error: strategy \"ddp\": ddp: "
                                       "rendezvous of 2 ranks at ", master, ":", kMasterPort,
                                       " (rank ", node, "): ")))
        << output;
  }
}

// --master_addr is a name that does not resolve: the error names it.
TEST(MultiHostTest, AMasterNameThatDoesNotResolveIsNamed) {
  auto network = TestNetwork::Create(2);
  if (absl::IsUnavailable(network.status())) GTEST_SKIP() << network.status().message();
  ASSERT_TRUE(network.ok()) << network.status();

  const std::string dir = RunDir("unresolvable_master");
  const std::string master = "no-such-host.invalid";
  const auto start = std::chrono::steady_clock::now();
  auto nodes = StartNodes(**network, {0, 1}, dir, WriteConfig(dir, "ddp", 4, 3), 1, master,
                          {"--set=strategy.options.timeout_seconds=3"});
  const std::vector<int> exit_codes = WaitForAll(nodes);
  Report(absl::StrFormat("master %s: both nodes failed within %.1f s", master,
                         SecondsSince(start)));
  for (int node = 0; node < 2; ++node) {
    const std::string output = nodes[node]->Output();
    Report(absl::StrCat("unresolvable master, node ", node, " says:\n", ErrorLines(output)));
    EXPECT_NE(exit_codes[node], 0) << output;
    EXPECT_THAT(ErrorLines(output), HasSubstr(master)) << output;
  }
}

}  // namespace
}  // namespace pipeline
