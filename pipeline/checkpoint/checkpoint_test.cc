#include "pipeline/checkpoint/checkpoint.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/temp_path.h"
#include "pipeline/testing/tiny_models.h"
#include "torch/nn/modules/linear.h"
#include "torch/optim/sgd.h"

namespace pipeline {
namespace {

using testing::TempPath;

TEST(CheckpointTest, KeepsTheLossScaleOfFloat16Runs) {
  testing::TinyModel model(3, 2);
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.1));
  CheckpointContents contents{/*epoch=*/1, /*step=*/7, {"a", "b"}, "trainer {}"};
  contents.grad_scale = 8192;
  contents.grad_scaler_growth_tracker = 5;
  const std::string path = TempPath("fp16.pt");
  ASSERT_TRUE(WriteCheckpoint(path, model, optimizer, contents).ok());
  auto loaded = ReadCheckpoint(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->contents.step, 7);
  EXPECT_EQ(loaded->contents.grad_scale, 8192);
  EXPECT_EQ(loaded->contents.grad_scaler_growth_tracker, 5);
}

TEST(CheckpointTest, HasNoLossScaleWithoutFloat16) {
  testing::TinyModel model(3, 2);
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.1));
  const std::string path = TempPath("fp32.pt");
  ASSERT_TRUE(
      WriteCheckpoint(path, model, optimizer, CheckpointContents{1, 7, {"a"}, "trainer {}"}).ok());
  auto loaded = ReadCheckpoint(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->contents.grad_scale, 0);
  EXPECT_EQ(loaded->model.size(), 2u);
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// /dev/full fails every write with ENOSPC: a full disk at a chosen file.
TEST(CheckpointTest, AFullDiskLeavesThePreviousCheckpointWhole) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  testing::TinyModel model(3, 2);
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.1));
  const std::string path = TempPath("full_disk.pt");
  ASSERT_TRUE(
      WriteCheckpoint(path, model, optimizer, CheckpointContents{1, 7, {"a"}, "trainer {}"}).ok());
  const std::string bytes = ReadFile(path);
  const std::string sum = ReadFile(ChecksumPathOf(path));
  std::filesystem::remove(path + ".tmp");
  std::filesystem::create_symlink("/dev/full", path + ".tmp");
  const absl::Status status =
      WriteCheckpoint(path, model, optimizer, CheckpointContents{2, 9, {"a"}, "trainer {}"});
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(), "cannot write " + path + ": No space left on device");
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(path + ".tmp")));
  EXPECT_EQ(ReadFile(path), bytes);
  EXPECT_EQ(ReadFile(ChecksumPathOf(path)), sum);
  auto loaded = ReadCheckpoint(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->contents.step, 7);
}

TEST(CheckpointTest, ADamagedChecksumFileIsNamed) {
  testing::TinyModel model(3, 2);
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.1));
  const std::string path = TempPath("torn_sum.pt");
  ASSERT_TRUE(
      WriteCheckpoint(path, model, optimizer, CheckpointContents{1, 7, {"a"}, "trainer {}"}).ok());
  const std::string sum = ReadFile(ChecksumPathOf(path));
  std::ofstream(ChecksumPathOf(path), std::ios::trunc) << sum.substr(0, sum.size() / 2);
  auto loaded = ReadCheckpoint(path);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(loaded.status().message(),
              ::testing::HasSubstr(path + ": its checksum file " + ChecksumPathOf(path) +
                                   " is damaged"));
}

}  // namespace
}  // namespace pipeline
