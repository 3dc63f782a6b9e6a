// A run SIGKILLed at a random step and continued with --resume=auto ends
// with bitwise the same weights as one that ran through (deterministic mode),
// in one process and with two ddp processes; a corrupted latest checkpoint
// is passed over for the one before it.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/checkpoint/checkpoint.h"
#include "pipeline/testing/background_process.h"
#include "pipeline/testing/deterministic_run.h"
#include "pipeline/testing/same_weights.h"

namespace pipeline {
namespace {

using ::pipeline::testing::ExpectSameModel;
using ::testing::HasSubstr;

// 2 epochs of 48 steps, a checkpoint every 5 steps.
std::string WriteConfig(const std::string& dir, bool ddp) {
  return testing::WriteDeterministicRunConfig(dir, ddp, {384, 40, 3, "every_steps: 5 keep_last: 3"});
}

int RunTrain(const std::string& arguments, const std::string& log) {
  const int status = std::system(("tools/train " + arguments + " >> " + log + " 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Starts the run in the background and SIGKILLs it once the log shows step
// `kill_at` (the train process itself, or under ddp the worker of rank 1,
// by the pid the launcher printed). False when the run reached its end
// before the kill landed: a step of this small model takes a millisecond or
// two, and the log is read every 10 ms.
bool KillAt(const std::string& dir, const std::string& config, int kill_at, bool ddp,
            const std::vector<std::string>& flags) {
  const std::string marker = absl::StrCat(kill_at > 48 ? "epoch 2/2" : "epoch 1/2", " step ",
                                          kill_at % 48 == 0 ? 48 : kill_at % 48, "/48");
  std::vector<std::string> command = {"tools/train", "--config=" + config};
  command.insert(command.end(), flags.begin(), flags.end());
  testing::BackgroundProcess run(command, dir + "/log");
  EXPECT_TRUE(run.WaitForOutput(marker)) << run.Output();
  if (ddp) {
    const std::optional<pid_t> rank1 = testing::LauncherWorkerPid(run.Output(), 1);
    EXPECT_TRUE(rank1.has_value()) << run.Output();
    if (rank1) ::kill(*rank1, SIGKILL);
    const int status = run.Wait();
    if (status == 0) return false;
    // The launcher sees its worker die, stops the other and exits.
    EXPECT_EQ(status, 1) << run.Output();
  } else {
    run.Signal(SIGKILL);
    const int status = run.Wait();
    if (status == 0) return false;
    EXPECT_EQ(status, 128 + SIGKILL) << run.Output();
  }
  // Killed before the end: no final checkpoint yet.
  EXPECT_FALSE(std::filesystem::exists(dir + "/out/checkpoint_epoch_2.pt")) << run.Output();
  return true;
}

// KillAt, from a fresh output folder each time, at earlier steps until a
// kill lands before the end; then resumes. Returns the step it aimed at.
int KillAndResume(const std::string& dir, const std::string& config, int kill_at, bool ddp,
                  const std::vector<std::string>& flags = {}) {
  bool killed = false;
  for (int attempt = 0; attempt < 6 && !killed; ++attempt) {
    if (attempt > 0) kill_at = std::max(1, kill_at / 2);
    std::filesystem::remove_all(dir + "/out");
    std::filesystem::remove(dir + "/log");
    killed = KillAt(dir, config, kill_at, ddp, flags);
    if (::testing::Test::HasFailure()) return kill_at;
  }
  EXPECT_TRUE(killed) << "every run reached its end before the kill landed";
  std::string flag_text;
  for (const std::string& flag : flags) flag_text += " '" + flag + "'";
  const std::string resumed_log = dir + "/resumed_log";
  EXPECT_EQ(RunTrain("--config=" + config + flag_text + " --resume=auto", resumed_log), 0)
      << testing::ReadFile(resumed_log);
  EXPECT_THAT(testing::ReadFile(resumed_log), HasSubstr("resume: continuing from "));
  return kill_at;
}

// Flips one byte in the middle of `path`.
void Damage(const std::string& path) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  const auto middle = static_cast<std::streamoff>(std::filesystem::file_size(path) / 2);
  file.seekg(middle);
  const char byte = static_cast<char>(file.get());
  file.seekp(middle);
  file.put(static_cast<char>(byte ^ 0x5a));
}

int RandomStep() {
  std::random_device device;
  return std::uniform_int_distribution<int>(6, 90)(device);
}

TEST(ResumeTest, KilledAtARandomStepAndResumedEndsBitwiseEqual) {
  const std::string root = ::testing::TempDir() + "/resume_single";
  const std::string reference = WriteConfig(root + "/reference", false);
  ASSERT_EQ(RunTrain("--config=" + reference, root + "/reference/log"), 0)
      << testing::ReadFile(root + "/reference/log");
  const std::string dir = root + "/killed";
  const std::string config = WriteConfig(dir, false);
  const int kill_at = KillAndResume(dir, config, RandomStep(), /*ddp=*/false);
  SCOPED_TRACE(absl::StrCat("killed at step ", kill_at));
  ExpectSameModel(root + "/reference/out/checkpoint_epoch_2.pt",
                  dir + "/out/checkpoint_epoch_2.pt");
  // The metrics of the interrupted epoch are whole again after the resume.
  EXPECT_EQ(testing::ReadFile(root + "/reference/out/checkpoint_best.pt.crc32c").empty(), false);
}

TEST(ResumeTest, TwoProcessDdpKilledAndResumedEndsBitwiseEqual) {
  const std::string root = ::testing::TempDir() + "/resume_ddp";
  const std::string reference = WriteConfig(root + "/reference", true);
  ASSERT_EQ(RunTrain("--config=" + reference, root + "/reference/log"), 0)
      << testing::ReadFile(root + "/reference/log");
  const std::string dir = root + "/killed";
  const std::string config = WriteConfig(dir, true);
  const int kill_at = KillAndResume(dir, config, RandomStep(), /*ddp=*/true);
  SCOPED_TRACE(absl::StrCat("killed at step ", kill_at));
  ExpectSameModel(root + "/reference/out/checkpoint_epoch_2.pt",
                  dir + "/out/checkpoint_epoch_2.pt");
}

constexpr char kShardedDdp[] =
    "--set=strategy={name: \"ddp\" options { [type.googleapis.com/pipeline.DdpOptions] { "
    "nproc_per_node: 2 shard_optimizer_state: true } }}";

// ZeRO-1: each rank steps its shard of the parameters; killed and resumed
// (each rank reloading the whole state the checkpoint holds) it ends with
// the weights of the unsharded run.
TEST(ResumeTest, ShardedOptimizerDdpKilledAndResumedEndsLikeTheUnshardedRun) {
  const std::string root = ::testing::TempDir() + "/resume_sharded";
  const std::string reference = WriteConfig(root + "/reference", true);
  ASSERT_EQ(RunTrain("--config=" + reference, root + "/reference/log"), 0)
      << testing::ReadFile(root + "/reference/log");
  const std::string dir = root + "/killed";
  const std::string config = WriteConfig(dir, true);
  const int kill_at = KillAndResume(dir, config, RandomStep(), /*ddp=*/true, {kShardedDdp});
  SCOPED_TRACE(absl::StrCat("killed at step ", kill_at));
  EXPECT_THAT(testing::ReadFile(dir + "/log"),
              HasSubstr("ddp: optimizer state sharded over 2 ranks: "));
  ExpectSameModel(root + "/reference/out/checkpoint_epoch_2.pt",
                  dir + "/out/checkpoint_epoch_2.pt");
}

// A sharded run's checkpoint holds the whole optimizer state (gathered to
// rank 0 as it is written): continued in one process, it trains on exactly
// as the unsharded run's checkpoint does. A checkpoint missing a shard's
// momentum would not.
TEST(ResumeTest, AShardedCheckpointResumesInOneProcessLikeAnUnshardedOne) {
  const std::string root = ::testing::TempDir() + "/resume_sharded_elsewhere";
  std::vector<std::string> resumed;
  for (const bool sharded : {false, true}) {
    const std::string name = sharded ? "/sharded" : "/whole";
    const std::string config = WriteConfig(root + name, true);
    const std::string flags =
        absl::StrCat(" --set=trainer.max_steps=12", sharded ? absl::StrCat(" '", kShardedDdp, "'") : "");
    ASSERT_EQ(RunTrain("--config=" + config + flags, root + name + "/log"), 0)
        << testing::ReadFile(root + name + "/log");
    const std::string single = WriteConfig(root + name + "_single", false);
    ASSERT_EQ(RunTrain("--config=" + single + " --set=trainer.max_steps=20 --resume=" + root + name +
                           "/out/checkpoint_step_10.pt",
                       root + name + "_single/log"),
              0)
        << testing::ReadFile(root + name + "_single/log");
    resumed.push_back(root + name + "_single/out/checkpoint_step_15.pt");
  }
  ExpectSameModel(root + "/whole/out/checkpoint_step_10.pt",
                  root + "/sharded/out/checkpoint_step_10.pt");
  ExpectSameModel(resumed[0], resumed[1]);
}

TEST(ResumeTest, WithTheRecipeOptionsKilledAndResumedEndsBitwiseEqual) {
  // Each keeps state across steps or epochs: the EMA average, the plateau
  // schedule's best and counts, early stopping's count; clipping changes
  // every step; mixup and cutmix draw from the step's own random stream.
  const std::vector<std::string> flags = {
      "--set=trainer.ema={decay: 0.9 warmup: true}",
      "--set=trainer.clip_grad={max_norm: 0.5}",
      "--set=trainer.early_stopping={patience: 5}",
      "--set=learning_rate.schedule={name: \"plateau\" options { "
      "[type.googleapis.com/pipeline.PlateauScheduleOptions] { patience: 0 } }}",
      "--set=checkpoint.best_metric=val_acc_ema",
      "--set=train_data.batch_transforms={name: \"mixup\" options { "
      "[type.googleapis.com/pipeline.MixupOptions] { cutmix_alpha: 1.0 } }}"};
  std::string flag_text;
  for (const std::string& flag : flags) flag_text += " '" + flag + "'";
  const std::string root = ::testing::TempDir() + "/resume_recipe";
  const std::string reference = WriteConfig(root + "/reference", false);
  ASSERT_EQ(RunTrain("--config=" + reference + flag_text, root + "/reference/log"), 0)
      << testing::ReadFile(root + "/reference/log");
  EXPECT_THAT(testing::ReadFile(root + "/reference/out/metrics.jsonl"),
              HasSubstr("\"val_acc_ema\":"));
  const std::string dir = root + "/killed";
  const std::string config = WriteConfig(dir, false);
  const int kill_at = KillAndResume(dir, config, RandomStep(), /*ddp=*/false, flags);
  SCOPED_TRACE(absl::StrCat("killed at step ", kill_at));
  ExpectSameModel(root + "/reference/out/checkpoint_epoch_2.pt",
                  dir + "/out/checkpoint_epoch_2.pt");

  // export_weights --ema writes the average, which differs from the weights.
  const std::string checkpoint = root + "/reference/out/checkpoint_epoch_2.pt";
  const std::string exported = root + "/ema_state_dict.pt";
  ASSERT_EQ(std::system(("tools/export_weights --ema --checkpoint=" + checkpoint + " --output=" +
                         exported + " > " + root + "/export_log 2>&1").c_str()),
            0)
      << testing::ReadFile(root + "/export_log");
  EXPECT_THAT(testing::ReadFile(root + "/export_log"), HasSubstr(", EMA average (epoch 2"));
  auto loaded = ReadCheckpoint(checkpoint);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_FALSE(loaded->contents.ema.empty());
  EXPECT_FALSE(loaded->contents.ema[0].second.equal(loaded->model[0].second));
}

// Parameter groups (norms and biases without weight decay, the head at 10x
// the rate, each group's rate scaled by the schedule) under LAMB, whose
// state is its own: the groups are formed again from the config on resume
// and each group's state is restored into its own.
TEST(ResumeTest, WithParameterGroupsKilledAndResumedEndsBitwiseEqual) {
  const std::vector<std::string> flags = {
      "--set=optimizer={name: \"lamb\" options { [type.googleapis.com/pipeline.LambOptions] { "
      "lr: 0.01 } } param_groups { norm_weight_decay: 0 bias_weight_decay: 0 "
      "lr_scales { pattern: \"fc.*\" lr_scale: 10 } }}",
      "--set=learning_rate.schedule={name: \"cosine\"}"};
  std::string flag_text;
  for (const std::string& flag : flags) flag_text += " '" + flag + "'";
  const std::string root = ::testing::TempDir() + "/resume_groups";
  const std::string reference = WriteConfig(root + "/reference", false);
  ASSERT_EQ(RunTrain("--config=" + reference + flag_text, root + "/reference/log"), 0)
      << testing::ReadFile(root + "/reference/log");
  const std::string log = testing::ReadFile(root + "/reference/log");
  EXPECT_THAT(log, HasSubstr("optimizer lamb: param group 0: "));
  EXPECT_THAT(log, HasSubstr(", lr x10, weight_decay the optimizer's\n"));
  EXPECT_THAT(log, HasSubstr(", lr x10, weight_decay 0\n"));
  const std::string dir = root + "/killed";
  const std::string config = WriteConfig(dir, false);
  const int kill_at = KillAndResume(dir, config, RandomStep(), /*ddp=*/false, flags);
  SCOPED_TRACE(absl::StrCat("killed at step ", kill_at));
  ExpectSameModel(root + "/reference/out/checkpoint_epoch_2.pt",
                  dir + "/out/checkpoint_epoch_2.pt");
}

TEST(ResumeTest, ExportingTheEmaOfARunWithoutOneIsAnError) {
  const std::string dir = ::testing::TempDir() + "/no_ema";
  const std::string config = WriteConfig(dir, false);
  ASSERT_EQ(RunTrain("--config=" + config + " --set=trainer.max_steps=2", dir + "/log"), 0)
      << testing::ReadFile(dir + "/log");
  const std::string checkpoint = dir + "/out/checkpoint_epoch_1.pt";
  const int status = std::system(("tools/export_weights --ema --checkpoint=" + checkpoint +
                                  " --output=" + dir + "/x.pt > " + dir + "/export_log 2>&1")
                                     .c_str());
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_THAT(testing::ReadFile(dir + "/export_log"),
              HasSubstr(checkpoint + ": holds no EMA weights (its run had no trainer.ema); "
                        "leave out --ema"));
}

TEST(ResumeTest, ACorruptedLatestCheckpointIsPassedOverForThePreviousOne) {
  const std::string dir = ::testing::TempDir() + "/resume_corrupt";
  const std::string config = WriteConfig(dir, false);
  ASSERT_EQ(RunTrain("--config=" + config + " --set=trainer.max_steps=20", dir + "/log"), 0)
      << testing::ReadFile(dir + "/log");
  // Steps 10 and 15 are rolling checkpoints, 20 the last one; damage it.
  const std::string latest = dir + "/out/checkpoint_epoch_1.pt";
  ASSERT_TRUE(std::filesystem::exists(latest)) << testing::ReadFile(dir + "/log");
  Damage(latest);
  const std::string log = dir + "/resumed_log";
  ASSERT_EQ(RunTrain("--config=" + config + " --set=trainer.max_steps=20 --resume=auto", log), 0)
      << testing::ReadFile(log);
  EXPECT_THAT(testing::ReadFile(log), HasSubstr("warning: skipping " + latest + ": is corrupted"));
  EXPECT_THAT(testing::ReadFile(log), HasSubstr("resume: continuing from " + dir +
                                       "/out/checkpoint_step_15.pt (step 15)"));
  // An explicit --resume of a damaged file is an error, not a crash (the
  // resumed run above wrote a good one in its place; damage it again).
  Damage(latest);
  EXPECT_EQ(RunTrain("--config=" + config + " --resume=" + latest, dir + "/explicit_log"), 2);
  EXPECT_THAT(testing::ReadFile(dir + "/explicit_log"), HasSubstr(latest + ": is corrupted"));
}

}  // namespace
}  // namespace pipeline
