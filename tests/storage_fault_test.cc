// Storage faults, with the real `train` binary on a small deterministic run
// (small_cnn, 24 steps, a checkpoint every 5): a disk that fills up at a
// checkpoint (a tmpfs this test mounts, with room for one checkpoint) under
// checkpoint.on_write_error STOP and CONTINUE; log files on a full disk
// (links to /dev/full, which fails every write with ENOSPC); an output_dir
// that cannot be written (a read-only tmpfs, a path under a regular file);
// and a lost last write (the newest checkpoint or its checksum file
// truncated after the run). Every run resumed after a fault ends with
// weights bitwise equal to a run that had none.

#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/checkpoint/checkpoint.h"
#include "pipeline/testing/command.h"
#include "pipeline/testing/same_weights.h"
#include "pipeline/testing/small_cnn_run.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;
using ::pipeline::testing::CommandResult;
using ::pipeline::testing::ExpectSameModel;
using ::testing::HasSubstr;
using ::testing::Not;

// 96 samples in batches of 8: 12 steps an epoch, 2 epochs. Step checkpoints
// at 5, 10, 15 and 20, epoch ones at 12 and 24, all kept.
std::string WriteConfig(const std::string& dir, const std::string& output_dir,
                        const std::string& checkpoint = "") {
  fs::create_directories(dir);
  const std::string path = absl::StrCat(dir, "/config.textproto");
  testing::SmallCnnRun run;
  run.trainer = "epochs: 2 seed: 7 deterministic: true log_interval: 1";
  run.checkpoint = "every_steps: 5 keep_last: 0 " + checkpoint;
  run.output_dir = output_dir;
  std::ofstream(path) << testing::SmallCnnConfigText(run);
  return path;
}

CommandResult Train(const std::string& arguments) {
  return testing::RunCommand("tools/train " + arguments);
}

// The value of `field` in the summary event of a run's output.
std::string SummaryField(const std::string& output, const std::string& field) {
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (!absl::StartsWith(line, "{\"event\":\"summary\"")) continue;
    const size_t at = line.find("\"" + field + "\":");
    if (at == absl::string_view::npos) return "";
    const absl::string_view rest = line.substr(at + field.size() + 3);
    return std::string(rest.substr(0, rest.find_first_of(",}")));
  }
  return "";
}

// The run with no fault, which every other must end equal to; run once.
struct Reference {
  std::string out;     // its output_dir
  std::string output;  // what it printed
};

const Reference& TheReference() {
  static const Reference* reference = [] {
    const std::string out = ::testing::TempDir() + "/reference/out";
    const CommandResult run =
        Train("--config=" + WriteConfig(::testing::TempDir() + "/reference", out));
    EXPECT_EQ(run.exit_code, 0) << run.output;
    return new Reference{out, run.output};
  }();
  return *reference;
}

const std::string& ReferenceDir() { return TheReference().out; }

// A tmpfs mounted for one test under a fresh folder in /tmp (outside
// Bazel's test folder, which Bazel could not clear if a killed test left a
// mount there), unmounted and removed when the test ends, failed or not.
class TmpfsMount {
 public:
  TmpfsMount(const std::string& size, bool read_only) {
    char dir[] = "/tmp/storage_fault_test_XXXXXX";
    if (::mkdtemp(dir) == nullptr) {
      error_ = absl::StrCat("mkdtemp: ", std::strerror(errno));
      return;
    }
    dir_ = dir;
    if (::geteuid() != 0) {
      error_ = "mounting a tmpfs needs root";
      return;
    }
    if (::mount("tmpfs", dir, "tmpfs", read_only ? MS_RDONLY : 0,
                ("size=" + size).c_str()) != 0) {
      error_ = absl::StrCat("mount -t tmpfs -o size=", size, " tmpfs ", dir_, ": ",
                            std::strerror(errno));
      return;
    }
    mounted_ = true;
  }
  ~TmpfsMount() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  const std::string& dir() const { return dir_; }

  // Bytes that can still be written.
  int64_t FreeBytes() const {
    struct statvfs stats {};
    ::statvfs(dir_.c_str(), &stats);
    return static_cast<int64_t>(stats.f_bavail) * static_cast<int64_t>(stats.f_frsize);
  }
  int64_t BlockSize() const {
    struct statvfs stats {};
    ::statvfs(dir_.c_str(), &stats);
    return static_cast<int64_t>(stats.f_frsize);
  }

 private:
  std::string dir_;
  std::string error_;
  bool mounted_ = false;
};

#define MOUNT_OR_SKIP(mount)                                                       \
  if (!(mount).mounted()) GTEST_SKIP() << "cannot make the test's file system: " \
                                       << (mount).error()

// Fills `mount` so that the run's small files (resolved config, run record,
// TensorBoard events: a block each; 4 allowed), one checkpoint and its
// checksum file fit, with half a checkpoint to spare: the second
// checkpoint, step 10, finds the disk full. Returns the filler's path.
std::string FillLeavingRoomForOneCheckpoint(const TmpfsMount& mount) {
  const int64_t block = mount.BlockSize();
  const int64_t checkpoint_bytes = static_cast<int64_t>(
      std::max(fs::file_size(ReferenceDir() + "/checkpoint_step_5.pt"),
               fs::file_size(ReferenceDir() + "/checkpoint_step_10.pt")));
  const int64_t checkpoint_blocks = (checkpoint_bytes + block - 1) / block + 1;
  const int64_t room = (4 + checkpoint_blocks + checkpoint_blocks / 2) * block;
  const std::string filler = mount.dir() + "/filler";
  std::ofstream(filler, std::ios::binary) << std::string(mount.FreeBytes() - room, 'x');
  EXPECT_EQ(mount.FreeBytes(), room);
  std::cout << "checkpoints of " << checkpoint_bytes << " bytes; " << room << " bytes ("
            << room / block << " blocks of " << block << ") left free on the tmpfs\n";
  return filler;
}

std::vector<std::string> TemporaryFilesIn(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (absl::EndsWith(entry.path().string(), ".tmp")) found.push_back(entry.path().string());
  }
  return found;
}

// The checkpoint reads back whole and matches its checksum file.
void ExpectGoodCheckpoint(const std::string& path, int64_t step) {
  ASSERT_TRUE(fs::exists(path + ".crc32c")) << path;
  auto loaded = ReadCheckpoint(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->contents.step, step);
}

TEST(StorageFaultTest, AFullDiskStopsTheRunAndResumeEndsBitwiseEqual) {
  ReferenceDir();
  TmpfsMount mount("1m", /*read_only=*/false);
  MOUNT_OR_SKIP(mount);
  const std::string filler = FillLeavingRoomForOneCheckpoint(mount);
  const std::string out = mount.dir() + "/out";
  const std::string config = WriteConfig(::testing::TempDir() + "/full_stop", out);
  const CommandResult failed = Train("--config=" + config);
  EXPECT_EQ(failed.exit_code, 1) << failed.output;
  EXPECT_THAT(failed.output, HasSubstr("checkpoint: " + out + "/checkpoint_step_5.pt\n"));
  EXPECT_THAT(failed.output,
              HasSubstr("error: checkpoint: cannot write " + out +
                        "/checkpoint_step_10.pt: No space left on device; free space on the disk "
                        "of " + out));
  EXPECT_THAT(failed.output,
              HasSubstr("--resume=auto continues from " + out + "/checkpoint_step_5.pt\n"));
  EXPECT_THAT(failed.output, HasSubstr("{\"event\":\"write_error\",\"file\":\"" + out +
                                       "/checkpoint_step_10.pt\""));
  EXPECT_THAT(failed.output, Not(HasSubstr("epoch 1/2 step 11/12")));
  // Nothing torn is left, and the checkpoint before stays whole.
  EXPECT_THAT(TemporaryFilesIn(out), ::testing::IsEmpty());
  EXPECT_FALSE(fs::exists(out + "/checkpoint_step_10.pt"));
  EXPECT_FALSE(fs::exists(out + "/checkpoint_step_10.pt.crc32c"));
  ExpectGoodCheckpoint(out + "/checkpoint_step_5.pt", 5);

  fs::remove(filler);
  const CommandResult resumed = Train("--config=" + config + " --resume=auto");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_THAT(resumed.output,
              HasSubstr("resume: continuing from " + out + "/checkpoint_step_5.pt (step 5)"));
  ExpectSameModel(ReferenceDir() + "/checkpoint_epoch_2.pt", out + "/checkpoint_epoch_2.pt");
}

TEST(StorageFaultTest, UnderContinueTheRunTrainsOnWithoutTheCheckpoints) {
  ReferenceDir();
  TmpfsMount mount("1m", /*read_only=*/false);
  MOUNT_OR_SKIP(mount);
  FillLeavingRoomForOneCheckpoint(mount);
  const std::string out = mount.dir() + "/out";
  const CommandResult run = Train(
      "--config=" +
      WriteConfig(::testing::TempDir() + "/full_continue", out, "on_write_error: CONTINUE"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const std::string name : {"step_10", "epoch_1", "step_15", "step_20", "epoch_2"}) {
    const std::string path = out + "/checkpoint_" + name + ".pt";
    EXPECT_THAT(run.output, HasSubstr("warning: checkpoint: cannot write " + path +
                                      ": No space left on device; continuing without it"));
    EXPECT_THAT(run.output, HasSubstr("{\"event\":\"write_error\",\"file\":\"" + path +
                                      "\",\"error\":\"cannot write " + path +
                                      ": No space left on device\",\"action\":\"continue\"}"));
    EXPECT_FALSE(fs::exists(path)) << path;
  }
  EXPECT_THAT(TemporaryFilesIn(out), ::testing::IsEmpty());
  ExpectGoodCheckpoint(out + "/checkpoint_step_5.pt", 5);
  // It trained through all 24 steps, exactly as the run with room did.
  EXPECT_EQ(SummaryField(run.output, "steps"), "24");
  for (const std::string field : {"train_loss", "train_acc", "val_loss", "val_acc"}) {
    EXPECT_EQ(SummaryField(run.output, field), SummaryField(TheReference().output, field)) << field;
  }
}

// /dev/full under the names train writes metrics.jsonl and the plot's
// temporary file to: every write to them fails with ENOSPC.
std::string OutputDirWithFullLogs(const std::string& name) {
  const std::string out = ::testing::TempDir() + "/" + name + "/out";
  fs::remove_all(out);
  fs::create_directories(out);
  fs::create_symlink("/dev/full", out + "/metrics.jsonl");
  fs::create_symlink("/dev/full", out + "/curves.svg.tmp");
  return out;
}

TEST(StorageFaultTest, LogFilesOnAFullDiskStopTheRunWithAnError) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  const std::string out = OutputDirWithFullLogs("full_logs_stop");
  const CommandResult run =
      Train("--config=" + WriteConfig(::testing::TempDir() + "/full_logs_stop", out));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("error: output_dir: cannot write " + out +
                                    "/metrics.jsonl: No space left on device; free space on "
                                    "the disk of " + out));
  // At the end of epoch 1, before its checkpoint.
  EXPECT_THAT(run.output,
              HasSubstr("--resume=auto continues from " + out + "/checkpoint_step_10.pt\n"));
}

TEST(StorageFaultTest, LogFilesOnAFullDiskAreWarnedAboutOnceUnderContinue) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  ReferenceDir();
  const std::string out = OutputDirWithFullLogs("full_logs_continue");
  const CommandResult run = Train(
      "--config=" + WriteConfig(::testing::TempDir() + "/full_logs_continue", out,
                                "on_write_error: CONTINUE"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string metrics_warning = "warning: output_dir: cannot write " + out +
                                      "/metrics.jsonl: No space left on device; continuing "
                                      "without it";
  EXPECT_THAT(run.output, HasSubstr(metrics_warning));
  // Three events were lost (two epochs and the summary): one warning.
  EXPECT_EQ(run.output.find(metrics_warning), run.output.rfind(metrics_warning));
  EXPECT_THAT(run.output, HasSubstr("warning: output_dir: cannot write " + out +
                                    "/curves.svg: No space left on device; continuing "
                                    "without it"));
  // The failed plot left no temporary file; the next epoch's was written.
  EXPECT_THAT(TemporaryFilesIn(out), ::testing::IsEmpty());
  EXPECT_TRUE(fs::exists(out + "/curves.svg"));
  ExpectSameModel(ReferenceDir() + "/checkpoint_epoch_2.pt", out + "/checkpoint_epoch_2.pt");
}

// Exit status 2 before any training, naming output_dir, with and without
// --dry_run.
void ExpectUnwritable(const std::string& config, const std::string& message) {
  for (const std::string dry_run : {"", " --dry_run"}) {
    const CommandResult run = Train("--config=" + config + dry_run);
    EXPECT_EQ(run.exit_code, 2) << dry_run << run.output;
    EXPECT_THAT(run.output, HasSubstr("error: output_dir: " + message + "\n")) << dry_run;
    EXPECT_THAT(run.output, Not(HasSubstr("epoch 1/2 step"))) << dry_run;
    EXPECT_THAT(run.output, Not(HasSubstr("checkpoint: "))) << dry_run;
    EXPECT_THAT(run.output, Not(HasSubstr("dry run: the config is valid"))) << dry_run;
  }
}

TEST(StorageFaultTest, AReadOnlyOutputDirIsAnErrorBeforeTraining) {
  TmpfsMount mount("1m", /*read_only=*/true);
  MOUNT_OR_SKIP(mount);
  const std::string dir = ::testing::TempDir() + "/read_only";
  ExpectUnwritable(WriteConfig(dir, mount.dir()),
                   "cannot write in " + mount.dir() + ": Read-only file system");
  ExpectUnwritable(WriteConfig(dir, mount.dir() + "/run"),
                   "cannot create " + mount.dir() + "/run: cannot write in " + mount.dir() +
                       ": Read-only file system");
  EXPECT_TRUE(fs::is_empty(mount.dir()));
}

TEST(StorageFaultTest, AnOutputDirUnderARegularFileIsAnErrorBeforeTraining) {
  const std::string dir = ::testing::TempDir() + "/under_a_file";
  fs::create_directories(dir);
  std::ofstream(dir + "/file") << "not a folder";
  ExpectUnwritable(WriteConfig(dir, dir + "/file/out"),
                   "cannot create " + dir + "/file/out: cannot write in " + dir +
                       "/file: Not a directory");
}

// A checkpoint torn after the run (a lost last write: the disk said it was
// written, and then it was not all there) is passed over for the one before,
// and the resumed run ends equal to the reference.
class LostLastWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ReferenceDir();
    out_ = ::testing::TempDir() + "/lost_last_write/out";
    config_ = WriteConfig(::testing::TempDir() + "/lost_last_write", out_);
    const CommandResult run = Train("--config=" + config_);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    newest_ = out_ + "/checkpoint_epoch_2.pt";
    ASSERT_TRUE(fs::exists(newest_)) << run.output;
  }

  // Resumes; the newest checkpoint is skipped with `reason`, step 20 taken.
  void ExpectResumedPastNewest(const std::string& reason) {
    const CommandResult resumed = Train("--config=" + config_ + " --resume=auto");
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_THAT(resumed.output, HasSubstr("warning: skipping " + newest_ + ": " + reason));
    EXPECT_THAT(resumed.output, HasSubstr("resume: continuing from " + out_ +
                                          "/checkpoint_step_20.pt (step 20)"));
    ExpectSameModel(ReferenceDir() + "/checkpoint_epoch_2.pt", newest_);
  }

  static void TruncateToHalf(const std::string& path) {
    fs::resize_file(path, fs::file_size(path) / 2);
  }

  std::string out_, config_, newest_;
};

TEST_F(LostLastWriteTest, ATruncatedNewestCheckpointIsPassedOver) {
  TruncateToHalf(newest_);
  ExpectResumedPastNewest("is corrupted: its checksum file " + newest_ + ".crc32c says");
}

TEST_F(LostLastWriteTest, ATruncatedNewestCheckpointWithoutItsChecksumIsPassedOver) {
  TruncateToHalf(newest_);
  fs::remove(newest_ + ".crc32c");
  ExpectResumedPastNewest("is not a checkpoint written by train (truncated or another format?)");
}

TEST_F(LostLastWriteTest, ATruncatedChecksumFileIsPassedOver) {
  TruncateToHalf(newest_ + ".crc32c");
  ExpectResumedPastNewest("its checksum file " + newest_ + ".crc32c is damaged");
}

}  // namespace
}  // namespace pipeline
