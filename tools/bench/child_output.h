#ifndef TOOLS_BENCH_CHILD_OUTPUT_H_
#define TOOLS_BENCH_CHILD_OUTPUT_H_

// The bench's child processes (train, the Python references, itself under
// another allocator) and what it reads from their output: each writes its
// stdout and stderr to a log file, and the bench takes its figures from the
// JSON lines the child prints.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/util/subprocess.h"

namespace pipeline {
namespace bench {

struct ProcessResult {
  int exit_code = -1;  // -1: never started
  std::string output;  // stdout and stderr, interleaved
  double peak_rss_mb = 0;
};

// Starts argv[0] with `env` ("NAME=value") added, its stdout and stderr
// going to `log`. Null (after saying why on stderr) when it cannot be
// started.
std::unique_ptr<Subprocess> StartProcess(const std::vector<std::string>& argv,
                                         const std::vector<std::string>& env,
                                         const std::string& log);

// Waits for `child` (null: never started): its exit, its output from `log`,
// and the peak resident memory of it and everything it waited for.
ProcessResult WaitProcess(std::unique_ptr<Subprocess> child, const std::string& log);

// StartProcess, then WaitProcess.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::vector<std::string>& env, const std::string& log);

// The number after "key": in the last line of `output` holding `marker`.
std::optional<double> JsonNumber(const std::string& output, const std::string& marker,
                                 const std::string& key);

// The end of `output` (its last 2000 characters), to show why a child
// failed.
std::string Tail(const std::string& output);

// The allocator `train` links (//third_party:tcmalloc), for children to
// preload: Python references run under it, as under glibc malloc page faults
// would dominate their steps.
inline constexpr char kTcmallocLibrary[] = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4";

// {"LD_PRELOAD=<kTcmallocLibrary>"} where it is installed, else none.
std::vector<std::string> TcmallocPreload();

// The last line of `output`, without surrounding whitespace: what a child
// that prints one figure (or version) at its end printed.
std::string LastLine(const std::string& output);

}  // namespace bench
}  // namespace pipeline

#endif  // TOOLS_BENCH_CHILD_OUTPUT_H_
