#include "tools/bench/loader_rate.h"

#include <cstdint>
#include <numeric>
#include <vector>

#include "pipeline/data/loader.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/registry/registry.h"
#include "tools/bench/or_die.h"
#include "tools/bench/timing.h"

namespace pipeline {
namespace bench {
namespace {

struct TrainTransforms {
  std::vector<std::unique_ptr<Transform>> owned;
  std::vector<const Transform*> in_order;
};

TrainTransforms MakeTrainTransforms(const PipelineConfig& config) {
  TrainTransforms transforms;
  for (const PluginConfig& transform : config.train_data().transforms()) {
    transforms.owned.push_back(OrDie(Registry<Transform>::Global().Create(transform, {})));
    transforms.in_order.push_back(transforms.owned.back().get());
  }
  return transforms;
}

LoaderOptions Workers(const PipelineConfig& config, int threads) {
  LoaderOptions options;
  options.batch_size = config.train_data().batch_size();
  options.num_workers = threads;
  options.prefetch_batches = config.train_data().prefetch_batches();
  options.seed = config.trainer().seed();
  return options;
}

// A loader's batches, epoch after epoch, each epoch in index order.
class EndlessBatches {
 public:
  EndlessBatches(Loader& loader, int64_t size) : loader_(loader), order_(size) {
    std::iota(order_.begin(), order_.end(), 0);
    loader_.StartEpoch(epoch_, order_);
  }

  // Runs the rest of the current epoch and starts the next.
  void FinishEpoch() {
    while (OrDie(loader_.Next())) {
    }
    loader_.StartEpoch(++epoch_, order_);
  }

  // The images of the next batch.
  int64_t Next() {
    while (true) {
      auto batch = OrDie(loader_.Next());
      if (batch) return batch->labels.size(0);
      loader_.StartEpoch(++epoch_, order_);
    }
  }

 private:
  Loader& loader_;
  std::vector<int64_t> order_;
  int64_t epoch_ = 0;
};

}  // namespace

std::unique_ptr<Dataset> TrainDataset(const PipelineConfig& config) {
  return OrDie(Registry<Dataset>::Global().Create(config.train_data().dataset(),
                                                  {"train", config.trainer().seed()}));
}

DataResult LoaderRate(const PipelineConfig& config, const Dataset& dataset, double min_seconds,
                      bool warm_whole_epoch, int threads) {
  const TrainTransforms transforms = MakeTrainTransforms(config);
  Loader loader(&dataset, transforms.in_order, Workers(config, threads));
  EndlessBatches batches(loader, dataset.size());
  if (warm_whole_epoch) batches.FinishEpoch();
  batches.Next();  // warm-up: the first batch pays for page faults and caches
  const Clock::time_point start = Clock::now();
  int64_t images = 0;
  while (Seconds(start) < min_seconds) images += batches.Next();
  DataResult result;
  result.images_per_sec = images / Seconds(start);
  result.sample_shape = OrDie(loader.LoadSample(0, 0)).image.ShapeString();
  return result;
}

DataResult DataPipelineRate(const PipelineConfig& config, double min_seconds) {
  return LoaderRate(config, *TrainDataset(config), min_seconds);
}

}  // namespace bench
}  // namespace pipeline
