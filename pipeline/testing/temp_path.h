#ifndef PIPELINE_TESTING_TEMP_PATH_H_
#define PIPELINE_TESTING_TEMP_PATH_H_

// Where a test writes its files: under Bazel's per-test TEST_TMPDIR (kept
// apart from every other test, removed afterwards), /tmp when run by hand.

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace pipeline {
namespace testing {

inline std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/" + name;
}

// Writes `bytes` as the whole of `path`, making its folders first.
inline void WriteFile(const std::filesystem::path& path, const std::string& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_TEMP_PATH_H_
