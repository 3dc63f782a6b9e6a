#include "pipeline/util/durable_file.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace pipeline {
namespace {

// gtest's TempDir is Bazel's TEST_TMPDIR, with a trailing slash.
std::string TempPath(const std::string& name) { return ::testing::TempDir() + name; }

TEST(DurableFileTest, WriteFileAtomicallyReplacesTheFileAndLeavesNoTemporary) {
  const std::string path = TempPath("atomic.txt");
  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second").ok());
  EXPECT_EQ(*ReadWholeFile(path), "second");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(DurableFileTest, AFileThatCannotBeMadeIsNamedAndNothingIsLeft) {
  const std::string path = TempPath("no_such_folder/file.txt");
  const absl::Status status = WriteFileAtomically(path, "text");
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(status.message(), "cannot write " + path + ": No such file or directory");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_EQ(ReadWholeFile(path).status().code(), absl::StatusCode::kNotFound);
}

TEST(DurableFileTest, AFolderUnderARegularFileIsNotWritable) {
  const std::string file = TempPath("a_file");
  std::ofstream(file) << "x";
  const absl::Status status = CheckDirectoryWritable(file + "/out/run");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "output_dir: cannot create " + file + "/out/run: cannot write in " +
                                  file + ": Not a directory");
}

TEST(DurableFileTest, AWritableFolderPassesAndKeepsNothing) {
  const std::string dir = TempPath("writable");
  std::filesystem::create_directories(dir);
  EXPECT_TRUE(CheckDirectoryWritable(dir).ok());
  EXPECT_TRUE(CheckDirectoryWritable(dir + "/not/yet").ok());
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

}  // namespace
}  // namespace pipeline
