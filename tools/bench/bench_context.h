#ifndef TOOLS_BENCH_BENCH_CONTEXT_H_
#define TOOLS_BENCH_BENCH_CONTEXT_H_

// What every section of the performance table gets: the options, the JPEG
// config pointed at the corpus, the table it adds its rows to, and the
// figures earlier sections measured for later ones to be set against.

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pipeline/config/pipeline.pb.h"
#include "pipeline/util/cpu_features.h"
#include "tools/bench/bench_options.h"
#include "tools/bench/child_output.h"
#include "tools/bench/loader_rate.h"
#include "tools/bench/markdown_table.h"

namespace pipeline {
namespace bench {

struct BenchContext {
  BenchOptions options;
  // The sections named by --sections.
  std::set<std::string> chosen;
  // The JPEG ImageFolder read at 224 (--corpus, or one written to the work
  // dir).
  std::string corpus;
  // --jpeg_config, resolved, reading the corpus, at --batch_size, without
  // validation data.
  PipelineConfig jpeg;
  Bf16Support bf16;
  // tools/train, beside the bench in its runfiles.
  std::string train_binary;
  MarkdownTable table{{"measurement", "images/s", "ratio", "to"}};

  // Set by the section that measures each (compute; data), read by later
  // ones; 0 or unset when that section did not run.
  double compute_ceiling = 0;
  std::optional<DataResult> jpeg_data;
  std::optional<DataResult> fashion_mnist_data;

  bool Chose(const std::string& section) const { return chosen.count(section) > 0; }
};

// The context for `chosen` sections: writes the corpus first when there is
// none. The bench stops when the JPEG config cannot be read or has no
// dataset `root` to point at the corpus.
BenchContext MakeBenchContext(const BenchOptions& options, std::set<std::string> chosen);

// Runs a child process (one at a time) with `env` added, its output logged
// to the work dir.
ProcessResult RunChild(const BenchContext& context, const std::vector<std::string>& argv,
                       const std::vector<std::string>& env = {});

}  // namespace bench
}  // namespace pipeline

#endif  // TOOLS_BENCH_BENCH_CONTEXT_H_
