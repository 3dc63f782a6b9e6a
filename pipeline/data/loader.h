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
#include <string>
#include <thread>
#include <unordered_set>
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
// Whether WriteChwMapped takes `image`.
bool FitsChannelMaps(const Image& image, const std::vector<ChannelMap>& maps);
// HWC uint8 pixels of `image` into CHW uint8 at `out`, values unchanged.
void WriteChwUint8(const Image& image, uint8_t* out);
// What the loader does with a sample that fails to load: its file is
// missing, unreadable or not a decodable image, or a transform rejects it.
enum class BadSamplePolicy {
  // The batch fails with the sample's error, which names the file.
  kFail,
  // The sample is replaced by the next one in the epoch's order (wrapping
  // around) that loads: batches stay full, so every process still takes the
  // same number of steps, and the choice depends only on the order, never
  // on which thread got there first. For training. (A run resumed inside an
  // epoch is given only the rest of that epoch's order, so a replacement
  // that has to wrap around to its start can differ from the one an
  // uninterrupted run would have made.)
  kReplace,
  // The sample is left out and its batch is smaller; a batch with no good
  // sample at all is passed over. For evaluation, where a replacement would
  // count another sample twice.
  kDrop,
};

// A sample that failed to load and was replaced or dropped.
struct SkippedSample {
  int64_t index = 0;
  std::string error;  // "sample <index>: <the dataset's message, naming the file>"
};

// The skipped samples of the batches Next() has handed out this epoch.
struct SkippedSamples {
  // The list is bounded: a folder of a million broken files must not turn
  // into a million log lines or that much memory.
  static constexpr size_t kMaxListed = 20;
  int64_t count = 0;
  std::vector<int64_t> indices;      // all of them, in batch order
  std::vector<SkippedSample> first;  // the first kMaxListed, with their errors
};

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
  BadSamplePolicy on_bad_sample = BadSamplePolicy::kFail;
  // Batches in pinned host memory, for an asynchronous copy to a CUDA
  // device. Needs a CUDA build; pinned batches come from LibTorch's caching
  // host allocator, which knows when a copy that reads one has finished,
  // instead of this loader's pool, which does not.
  bool pin_memory = false;
  // The trailing ChannelMaps (to_float, normalize) are left to the
  // consumer, to run on the device (ApplyChannelMaps): batches of uint8
  // images come out as uint8, with the maps in Batch::device_maps.
  bool channel_maps_on_device = false;
};

struct Batch {
  at::Tensor images;  // N x C x H x W, float32 (uint8 with device_maps)
  at::Tensor labels;  // N, int64
  // N x classes class probabilities from batch transforms (mixup, cutmix),
  // the loss's targets where defined; undefined otherwise.
  at::Tensor targets;
  // Positions of this batch whose sample failed (replaced or dropped).
  std::vector<SkippedSample> skipped;
  // Under channel_maps_on_device, for uint8 images: the ChannelMaps that
  // make them the float batch the model takes (ApplyChannelMaps).
  std::vector<ChannelMap> device_maps;
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

  // The dataset's first sample as it would be in `epoch`, or, unless bad
  // samples fail the run, the first one that loads; an error names the
  // sample ("sample 0: ..."). Tells the trainer what the model's input is.
  absl::StatusOr<Sample> FirstSample(int64_t epoch) const;

  // Samples skipped in the batches taken so far this epoch. Read it on the
  // thread that calls Next().
  const SkippedSamples& skipped() const { return skipped_; }

 private:
  absl::StatusOr<Batch> BuildBatch(int64_t job) const;
  // The sample with transforms [0, end) applied.
  absl::StatusOr<Sample> LoadSampleUpTo(int64_t index, int64_t epoch, size_t end) const;
  // Under kReplace: the sample that stands in for position `position` of
  // this epoch's order, whose own sample failed with `error`.
  absl::StatusOr<Sample> LoadReplacement(int64_t position, const absl::Status& error,
                                         bool* mapped_in_write) const;
  // The sample as BuildBatch writes it: every transform before the fused
  // ChannelMaps applied, and the maps too when the image is not what they
  // take (*mapped_in_write = false), so their own errors surface.
  absl::StatusOr<Sample> LoadForBatch(int64_t index, bool* mapped_in_write) const;
  // An N x C x H x W tensor of `type` for a batch: one handed out before
  // whose memory nothing refers to any more (the trainer has dropped that
  // batch and every view of it), or a new one.
  at::Tensor BatchImages(int64_t n, int64_t channels, int64_t height, int64_t width,
                         at::ScalarType type) const;
  // Whether a batch whose first sample is `image` (*mapped_in_write as
  // LoadForBatch set it) goes out as uint8 with the maps left to apply.
  bool LeavesMapsToDevice(const Image& image, bool mapped_in_write) const;
  bool IsKnownBad(int64_t index) const;
  void MarkBad(int64_t index) const;
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

  // Samples of this epoch known to fail, so that a run of broken files is
  // not decoded again for every position that looks past it. Only a
  // shortcut: a sample in it would fail again anyway, so which worker filled
  // it first does not change any batch.
  mutable std::mutex bad_mutex_;
  mutable std::unordered_set<int64_t> known_bad_;

  SkippedSamples skipped_;  // the consumer's: written by Next() only

  // Batch tensors for reuse, so a steady run allocates (and page-faults in)
  // no new batch memory: at most the batches that can be alive at once
  // (prefetched, in progress, and the trainer's own) plus one.
  mutable std::mutex pool_mutex_;
  mutable std::vector<at::Tensor> image_pool_;
};

}  // namespace pipeline

#endif  // PIPELINE_DATA_LOADER_H_
