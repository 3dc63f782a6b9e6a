// trainer.on_nonfinite with real NaNs at known steps: the `nonfinite` test
// model (tests/nonfinite_model) routes chosen training passes through
// sqrt(0) * 0, a finite loss with a NaN gradient, or multiplies the logits
// by NaN on one rank. STOP ends the run before the weights change and
// leaves the last checkpoint as it was; SKIP_STEP leaves those updates out,
// counts them and gives up after too many in a row; under ddp every rank
// takes the decision of the rank whose loss was not finite. And a rank that
// hangs while still running: its peer's collective times out and names it.

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/checkpoint/checkpoint.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

constexpr char kLibrary[] = "tests/nonfinite_model/libnonfinite_model.so";

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// 64 synthetic samples in batches of 8 (ddp: 4 + 4), 8 steps, a checkpoint
// after every step; `model_options` for NonFiniteModelOptions.
std::string WriteConfig(const std::string& dir, const std::string& model_options, bool ddp) {
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/config.textproto";
  std::ofstream(path) << absl::StrCat(R"pb(
    model {
      name: "nonfinite"
      options { [type.googleapis.com/pipeline_test.NonFiniteModelOptions] { )pb",
                                      model_options, R"pb( } }
    }
    train_data {
      dataset {
        name: "synthetic"
        options {
          [type.googleapis.com/pipeline.SyntheticOptions] {
            num_samples: 64 height: 8 width: 8 channels: 1 num_classes: 2
          }
        }
      }
      batch_size: )pb",
                                      ddp ? "4 sampler { name: \"distributed\" }" : "8", R"pb(
    }
    optimizer {
      name: "sgd"
      options { [type.googleapis.com/pipeline.SgdOptions] { lr: 0.1 momentum: 0.9 } }
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
    trainer { epochs: 1 log_interval: 1 }
    checkpoint { every_steps: 1 keep_last: 0 }
    output_dir: ")pb",
                                      dir, R"pb(/out"
  )pb");
  return path;
}

struct Result {
  int exit_code = -1;
  std::string output;
};

Result RunTrain(const std::string& dir, const std::string& config, const std::string& flags = "") {
  const std::string log = dir + "/log";
  const int status = std::system(absl::StrCat("tools/train --plugin_library=", kLibrary,
                                              " --config=", config, " ", flags, " > ", log,
                                              " 2>&1")
                                     .c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(log)};
}

LoadedCheckpoint Read(const std::string& path) {
  auto checkpoint = ReadCheckpoint(path);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.status();
  return checkpoint.ok() ? std::move(*checkpoint) : LoadedCheckpoint{};
}

bool SameWeights(const LoadedCheckpoint& a, const LoadedCheckpoint& b) {
  if (a.model.size() != b.model.size() || a.model.empty()) return false;
  for (size_t i = 0; i < a.model.size(); ++i) {
    if (!a.model[i].second.equal(b.model[i].second)) return false;
  }
  return true;
}

bool AllFinite(const LoadedCheckpoint& checkpoint) {
  for (const auto& [name, tensor] : checkpoint.model) {
    if (!tensor.isfinite().all().item<bool>()) return false;
  }
  return !checkpoint.model.empty();
}

// trainer.grad_scaler (on under FP16_AUTOCAST; here on the CPU in float32,
// where it works the same): a step whose gradients are not finite is
// GradScaler's skipped step, not an error, whatever on_nonfinite says; the
// scale halves, and grows again after growth_interval finite steps.
constexpr char kScaler[] =
    "--set=trainer.grad_scaler.enabled=true --set=trainer.grad_scaler.growth_interval=3";

TEST(LossScalerTest, ANanGradientStepIsSkippedAndTheScaleBacksOffThenGrows) {
  const std::string dir = ::testing::TempDir() + "/scaler_skip";
  const Result run = RunTrain(dir, WriteConfig(dir, "nan_gradient_at: [3, 4]", false), kScaler);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("step 3 (epoch 1): the gradient of parameter poison holds "
                                    "NaN at loss scale 65536; skipped this optimizer step, loss "
                                    "scale now 32768 (1 skipped so far)"));
  EXPECT_THAT(run.output, HasSubstr("step 4 (epoch 1): the gradient of parameter poison holds "
                                    "NaN at loss scale 32768; skipped this optimizer step, loss "
                                    "scale now 16384 (2 skipped so far)"));
  EXPECT_THAT(run.output, HasSubstr("\"skipped_steps\":2"));
  EXPECT_TRUE(SameWeights(Read(dir + "/out/checkpoint_step_2.pt"),
                          Read(dir + "/out/checkpoint_step_4.pt")));
  // (scale, finite steps since it changed) after each step.
  const std::vector<std::pair<double, int64_t>> expected = {
      {65536, 1}, {65536, 2}, {32768, 0}, {16384, 0}, {16384, 1}, {16384, 2}, {32768, 0},
      {32768, 1}};
  for (int step = 1; step <= 8; ++step) {
    // The last step's checkpoint is the epoch's.
    const LoadedCheckpoint checkpoint =
        Read(step == 8 ? dir + "/out/checkpoint_epoch_1.pt"
                       : absl::StrCat(dir, "/out/checkpoint_step_", step, ".pt"));
    EXPECT_EQ(checkpoint.contents.grad_scale, expected[step - 1].first) << step;
    EXPECT_EQ(checkpoint.contents.grad_scaler_growth_tracker, expected[step - 1].second) << step;
    EXPECT_TRUE(AllFinite(checkpoint)) << step;
  }
}

// Scaling by a power of two and back is exact: with no overflow, a scaled
// run's weights are bitwise those of the same run unscaled.
TEST(LossScalerTest, WithoutOverflowScalingLeavesTheWeightsBitwiseAsTheyWere) {
  const std::string scaled = ::testing::TempDir() + "/scaler_exact_scaled";
  const std::string plain = ::testing::TempDir() + "/scaler_exact_plain";
  ASSERT_EQ(RunTrain(scaled, WriteConfig(scaled, "", false), kScaler).exit_code, 0);
  ASSERT_EQ(RunTrain(plain, WriteConfig(plain, "", false)).exit_code, 0);
  const LoadedCheckpoint a = Read(scaled + "/out/checkpoint_epoch_1.pt");
  EXPECT_EQ(a.contents.grad_scale, 65536.0 * 4);  // grew after steps 3 and 6
  EXPECT_TRUE(SameWeights(a, Read(plain + "/out/checkpoint_epoch_1.pt")));
  EXPECT_FALSE(SameWeights(a, Read(plain + "/out/checkpoint_step_7.pt")));
}

// The scale is in the checkpoints: a run resumed at step 4 scales on as the
// uninterrupted one did.
TEST(LossScalerTest, AResumedRunContinuesWithTheCheckpointsScale) {
  const std::string dir = ::testing::TempDir() + "/scaler_resume";
  const std::string config = WriteConfig(dir, "", false);
  ASSERT_EQ(RunTrain(dir, config, kScaler).exit_code, 0);
  const LoadedCheckpoint uninterrupted = Read(dir + "/out/checkpoint_epoch_1.pt");
  const Result resumed = RunTrain(
      dir, config, absl::StrCat(kScaler, " --resume=", dir, "/out/checkpoint_step_4.pt"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const LoadedCheckpoint again = Read(dir + "/out/checkpoint_epoch_1.pt");
  EXPECT_EQ(again.contents.grad_scale, uninterrupted.contents.grad_scale);
  EXPECT_EQ(again.contents.grad_scaler_growth_tracker,
            uninterrupted.contents.grad_scaler_growth_tracker);
  EXPECT_EQ(again.contents.grad_scaler_growth_tracker, 2);
}

TEST(NonFiniteTest, ANanGradientStopsBeforeTheUpdateAndKeepsTheLastCheckpoint) {
  const std::string dir = ::testing::TempDir() + "/nonfinite_stop";
  const Result run = RunTrain(dir, WriteConfig(dir, "nan_gradient_at: 3", false));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output,
              HasSubstr("error: step 3 (epoch 1): the gradient of parameter poison holds NaN; "
                        "stopped before the weights were updated"));
  EXPECT_THAT(run.output, HasSubstr("trainer.on_nonfinite: SKIP_STEP"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/out/checkpoint_step_3.pt"));
  const LoadedCheckpoint last = Read(dir + "/out/checkpoint_step_2.pt");
  EXPECT_EQ(last.contents.step, 2);
  EXPECT_TRUE(AllFinite(last));
}

TEST(NonFiniteTest, SkipStepLeavesTheUpdatesOutAndCountsThem) {
  const std::string dir = ::testing::TempDir() + "/nonfinite_skip";
  const Result run = RunTrain(dir, WriteConfig(dir, "nan_gradient_at: [3, 4]", false),
                              "--set=trainer.on_nonfinite=SKIP_STEP");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("step 3 (epoch 1): the gradient of parameter poison holds "
                                    "NaN; skipped this optimizer step (1 skipped so far, 1 in a "
                                    "row)"));
  EXPECT_THAT(run.output, HasSubstr("step 4 (epoch 1): the gradient of parameter poison holds "
                                    "NaN; skipped this optimizer step (2 skipped so far, 2 in a "
                                    "row)"));
  EXPECT_THAT(run.output, HasSubstr("train: 2 of 8 optimizer steps skipped for non-finite values"));
  EXPECT_THAT(run.output, HasSubstr("\"steps\":8,"));
  EXPECT_THAT(run.output, HasSubstr("\"skipped_steps\":2,"));
  // Skipped steps leave the weights as they were; the others move them.
  const LoadedCheckpoint step2 = Read(dir + "/out/checkpoint_step_2.pt");
  const LoadedCheckpoint step4 = Read(dir + "/out/checkpoint_step_4.pt");
  const LoadedCheckpoint step5 = Read(dir + "/out/checkpoint_step_5.pt");
  EXPECT_TRUE(SameWeights(step2, step4));
  EXPECT_FALSE(SameWeights(step4, step5));
  EXPECT_TRUE(AllFinite(Read(dir + "/out/checkpoint_epoch_1.pt")));
}

TEST(NonFiniteTest, SkipStepGivesUpAfterTooManyInARow) {
  const std::string dir = ::testing::TempDir() + "/nonfinite_skip_bound";
  const Result run = RunTrain(dir, WriteConfig(dir, "nan_gradient_at: [2, 3, 4]", false),
                              "--set=trainer.on_nonfinite=SKIP_STEP "
                              "--set=trainer.max_consecutive_skipped_steps=2");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output,
              HasSubstr("error: step 4 (epoch 1): the gradient of parameter poison holds NaN; 3 "
                        "steps in a row were skipped for non-finite values (more than "
                        "trainer.max_consecutive_skipped_steps: 2), 3 in all; stopped"));
}

TEST(NonFiniteTest, DdpRanksSkipTogetherForOneRanksNanLoss) {
  const std::string dir = ::testing::TempDir() + "/nonfinite_ddp_skip";
  const Result run = RunTrain(dir, WriteConfig(dir, "nan_loss_at: 3 nan_loss_rank: 1", true),
                              "--set=trainer.on_nonfinite=SKIP_STEP");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("step 3 (epoch 1): the training loss of rank 1 is not "
                                    "finite; skipped this optimizer step (1 skipped so far"));
  EXPECT_THAT(run.output, HasSubstr("\"skipped_steps\":1,"));
  // Both ranks left the update out: the replicas stayed equal, and rank 0's
  // weights did not move in step 3.
  EXPECT_TRUE(SameWeights(Read(dir + "/out/checkpoint_step_2.pt"),
                          Read(dir + "/out/checkpoint_step_3.pt")));
  EXPECT_TRUE(AllFinite(Read(dir + "/out/checkpoint_epoch_1.pt")));
}

TEST(NonFiniteTest, DdpRanksStopTogetherForOneRanksNanLoss) {
  const std::string dir = ::testing::TempDir() + "/nonfinite_ddp_stop";
  const Result run = RunTrain(dir, WriteConfig(dir, "nan_loss_at: 3 nan_loss_rank: 1", true));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  // Each rank stops with the same verdict.
  EXPECT_THAT(run.output, HasSubstr("[rank 0] error: step 3 (epoch 1): the training loss of "
                                    "rank 1 is not finite; stopped before the weights were "
                                    "updated"));
  EXPECT_THAT(run.output, HasSubstr("[rank 1] error: step 3 (epoch 1): the training loss of "
                                    "rank 1 is not finite; stopped before the weights were "
                                    "updated"));
  EXPECT_TRUE(AllFinite(Read(dir + "/out/checkpoint_step_2.pt")));
  EXPECT_FALSE(std::filesystem::exists(dir + "/out/checkpoint_step_3.pt"));
}

// A deadlocked peer is still running, so no exit and no stop signal gives it
// away; rank 0's collective times out, and the store says which rank never
// came and where it last was.
TEST(FaultyPeerTest, ARankThatHangsWhileRunningIsNamedByItsPeer) {
  const std::string dir = ::testing::TempDir() + "/hang";
  const std::string config = WriteConfig(dir, "hang_at: 3 hang_rank: 1", /*ddp=*/true);
  // No deadline here: the runner's own bound is what the message reports
  // (timeout_seconds), and the test's timeout is the backstop for a hang.
  const Result result = RunTrain(dir, config, "--set=strategy.options.timeout_seconds=5");
  EXPECT_NE(result.exit_code, 0) << result.output;
  // The runner's words around Gloo's, never Gloo's own: its wording of a
  // timeout differs between builds ("Operation timed out!", "Timed out
  // waiting 5000ms for recv operation to complete").
  EXPECT_THAT(result.output, HasSubstr("[rank 0] error: ddp: training step: all-reduce of "
                                       "gradient bucket 1 of 1: "))
      << result.output;
  EXPECT_THAT(result.output, HasSubstr(" (waited up to timeout_seconds: 5); this is collective "
                                       "number "))
      << result.output;
  // Step 2 ended with the sum for its checkpoint (every_steps: 1); rank 1
  // hung in step 3's forward pass, before its gradients.
  EXPECT_THAT(result.output, HasSubstr(" of this rank, and rank 1 has not reached it: its last "
                                       "was number "))
      << result.output;
  EXPECT_THAT(result.output, HasSubstr(", sum of the epoch's training figures\n")) << result.output;
}

}  // namespace
}  // namespace pipeline
