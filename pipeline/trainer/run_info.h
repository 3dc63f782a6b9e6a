#ifndef PIPELINE_TRAINER_RUN_INFO_H_
#define PIPELINE_TRAINER_RUN_INFO_H_

// What a run was made of, written as run_info.json beside the resolved
// config: with both, a result can be traced to the exact source revision and
// the library versions that produced it.

#include <string>
#include <utility>
#include <vector>

namespace pipeline {

struct RunInfoInputs {
  // The command line as the user typed it.
  std::vector<std::string> command_line;
  // A folder inside the source tree whose git revision is recorded (the
  // config file's folder); "" = the working directory.
  std::string source_dir;
  // What the run computes in and why (ComputeFormatFields), as the
  // "compute" object of string fields; none: no such object.
  std::vector<std::pair<std::string, std::string>> compute;
};

// The git revision of `source_dir` (with "-dirty" when tracked files are
// modified), or "" when it is not inside a git checkout or git is missing.
std::string GitRevision(const std::string& source_dir);

// A JSON object: start time, host, command line, git revision, the versions
// of the libraries the runner was built against and LibTorch's build
// configuration (BLAS, OpenMP, CPU capability), and the compute fields.
std::string RunInfoJson(const RunInfoInputs& inputs);

// (name, version) of each library the runner was compiled against: libtorch,
// protobuf, abseil, libjpeg_turbo, libpng, compiler.
std::vector<std::pair<std::string, std::string>> LibraryVersions();

// One line for --version: the build (CPU or CUDA) and LibraryVersions().
std::string VersionText();

// `text` as a JSON string literal, quotes included.
std::string JsonQuote(const std::string& text);

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_RUN_INFO_H_
