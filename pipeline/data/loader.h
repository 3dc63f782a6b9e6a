#ifndef PIPELINE_DATA_LOADER_H_
#define PIPELINE_DATA_LOADER_H_

// The batch loader: a fixed pool of threads reads, decodes and transforms
// samples and writes them straight into the batch tensor, a bounded number of
// batches ahead of the trainer. Threads, not processes: a sample is produced
// where it is consumed, with no copies through shared memory.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "ATen/core/Tensor.h"
#include "absl/status/statusor.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/interfaces/transform.h"

namespace pipeline {

// HWC pixels of `image` into CHW floats at `out`; uint8 pixels are scaled to
// [0, 1], as if a to_float transform had run. Shared with tools that
// assemble batches themselves (predict), so they feed the model exactly
// what training and validation did.
void WriteChw(const Image& image, float* out);

// The same with `maps` (ChannelMaps, in order) applied on the way, when
// `image` is what they take (its type, and 1 or `channels` values in each);
// false, writing nothing, when it is not.
bool WriteChwMapped(const Image& image, const std::vector<ChannelMap>& maps, float* out);

struct LoaderOptions {
  int batch_size = 64;
  // Threads producing batches; at least 1.
  int num_workers = 1;
  // Finished batches allowed to wait for the trainer.
  int prefetch_batches = 2;
  bool drop_last = false;
  // Seeds each sample's augmentation, with the epoch and the sample index.
  uint64_t seed = 0;
  // Dataset label -> label the model is trained with (validation classes are
  // mapped onto the training classes by name). Empty = unchanged.
  std::vector<int64_t> label_map;
};

struct Batch {
  at::Tensor images;  // N x C x H x W, float32
  at::Tensor labels;  // N, int64
};

class Loader {
 public:
  Loader(const Dataset* dataset, std::vector<const Transform*> transforms, LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  int64_t BatchesPerEpoch(int64_t samples) const;

  // Begins producing the batches of `indices` (this epoch's sampler order).
  // Any batches of a previous epoch not yet taken are dropped.
  void StartEpoch(int64_t epoch, std::vector<int64_t> indices);

  // The next batch of the epoch, nullopt after the last, or the error of the
  // first sample that could not be loaded.
  absl::StatusOr<std::optional<Batch>> Next();

  // One sample, read and transformed as it would be in `epoch`.
  absl::StatusOr<Sample> LoadSample(int64_t index, int64_t epoch) const;

 private:
  absl::StatusOr<Batch> BuildBatch(int64_t job) const;
  // The sample with transforms [0, end) applied.
  absl::StatusOr<Sample> LoadSampleUpTo(int64_t index, int64_t epoch, size_t end) const;
  void WorkerLoop();
  void StopWorkers();

  const Dataset* dataset_;
  std::vector<const Transform*> transforms_;
  // The trailing transforms that are ChannelMaps (to_float, normalize) run
  // while the batch tensor is written: transforms_[fused_from_, end).
  size_t fused_from_ = 0;
  std::vector<ChannelMap> fused_maps_;
  LoaderOptions options_;

  // State of the current epoch, guarded by mutex_.
  std::mutex mutex_;
  std::condition_variable changed_;
  int64_t epoch_ = 0;
  std::vector<int64_t> indices_;
  int64_t num_jobs_ = 0;
  int64_t next_job_ = 0;
  int64_t consumed_ = 0;
  bool stop_ = false;
  std::map<int64_t, absl::StatusOr<Batch>> ready_;
  std::vector<std::thread> workers_;
};

}  // namespace pipeline

#endif  // PIPELINE_DATA_LOADER_H_
