#ifndef PIPELINE_TESTING_TEMP_PATH_H_
#define PIPELINE_TESTING_TEMP_PATH_H_

// Where a test writes its files: under Bazel's per-test TEST_TMPDIR (kept
// apart from every other test, removed afterwards), /tmp when run by hand.

#include <cstdlib>
#include <string>

namespace pipeline {
namespace testing {

inline std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/" + name;
}

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_TEMP_PATH_H_
