#ifndef TOOLS_BENCH_BENCH_CONFIGS_H_
#define TOOLS_BENCH_BENCH_CONFIGS_H_

// The configs the bench reads, and those it writes for its child runs of
// train.

#include <string>

#include "pipeline/config/pipeline.pb.h"

namespace pipeline {
namespace bench {

// The config at `path` with every default filled in; the bench stops when
// it cannot be read.
PipelineConfig LoadResolved(const std::string& path);

// Writes `config` as text to <work_dir>/<name>; returns that path.
std::string WriteConfig(const std::string& work_dir, const std::string& name,
                        const PipelineConfig& config);

// "random_resized_crop + random_horizontal_flip + ...": a config's training
// transforms, as the table names the pipeline it measured.
std::string TransformNames(const PipelineConfig& config);

}  // namespace bench
}  // namespace pipeline

#endif  // TOOLS_BENCH_BENCH_CONFIGS_H_
