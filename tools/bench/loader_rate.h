#ifndef TOOLS_BENCH_LOADER_RATE_H_
#define TOOLS_BENCH_LOADER_RATE_H_

// The data pipeline alone: how fast the runner's loader, with a given number
// of worker threads, delivers a config's training data through its
// transforms.

#include <memory>
#include <string>

#include "pipeline/config/pipeline.pb.h"
#include "pipeline/interfaces/dataset.h"

namespace pipeline {
namespace bench {

struct DataResult {
  double images_per_sec = 0;
  std::string sample_shape;   // "HxWxC" of a transformed sample
};

// `config`'s training dataset; the bench stops when it cannot be made.
std::unique_ptr<Dataset> TrainDataset(const PipelineConfig& config);

// Images per second the loader (`threads` workers) delivers from `dataset`
// through `config`'s training transforms, for at least `min_seconds`; after
// one batch, or with `warm_whole_epoch` one epoch, untimed.
DataResult LoaderRate(const PipelineConfig& config, const Dataset& dataset, double min_seconds,
                      bool warm_whole_epoch = false, int threads = 1);

// LoaderRate on `config`'s own training dataset.
DataResult DataPipelineRate(const PipelineConfig& config, double min_seconds);

}  // namespace bench
}  // namespace pipeline

#endif  // TOOLS_BENCH_LOADER_RATE_H_
