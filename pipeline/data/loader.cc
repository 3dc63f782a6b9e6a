#include "pipeline/data/loader.h"

#include <algorithm>

#include "ATen/ops/empty.h"
#include "absl/strings/str_cat.h"
#include "pipeline/util/simd.h"

namespace pipeline {
namespace {

absl::Status NamedSampleError(int64_t index, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat("sample ", index, ": ", status.message()));
}

// Whether `tensor` (a handle the pool holds) is the only thing referring to
// its memory: no other handle to it, and no view of it.
bool IsOnlyReference(const at::Tensor& tensor) {
  return tensor.use_count() == 1 && tensor.storage().use_count() == 1;
}

at::TensorOptions PinnedIf(bool pinned, at::ScalarType type) {
  return at::TensorOptions().dtype(type).pinned_memory(pinned);
}

absl::Status NothingLoads(int64_t samples, const absl::Status& first_error) {
  return absl::Status(first_error.code(),
                      absl::StrCat("every one of the ", samples,
                                   " samples failed to load, so on_bad_sample: SKIP has none to "
                                   "use instead; the first: ",
                                   first_error.message()));
}

}  // namespace

bool FitsChannelMaps(const Image& image, const std::vector<ChannelMap>& maps) {
  const int channels = image.channels;
  for (size_t m = 0; m < maps.size(); ++m) {
    const ChannelMap& map = maps[m];
    // Only the first map sees the image's own type; the rest see floats.
    const bool uint8_in = m == 0 && !image.is_float();
    if (uint8_in ? !map.takes_uint8 : !map.takes_float) return false;
    for (const std::vector<float>* values : {&map.multiply, &map.subtract, &map.divide}) {
      if (values->size() != 1 && static_cast<int>(values->size()) != channels) return false;
    }
  }
  return true;
}

namespace {

// Copies `count` pixels of every channel from HWC `in` (pixel `begin` on)
// into the CHW planes at `out`, `plane` values apart, as floats.
template <int kChannels, typename T>
PIPELINE_SIMD_INLINE void DeinterleaveChunk(const T* in, size_t count, size_t plane, float* out) {
  if constexpr (kChannels == 1) {
    for (size_t i = 0; i < count; ++i) out[i] = static_cast<float>(in[i]);
  } else {
    // One pass over the pixels writing every plane: a loop per channel would
    // read the interleaved input kChannels times, strided.
    float* planes[kChannels];
    for (int c = 0; c < kChannels; ++c) planes[c] = out + c * plane;
    for (size_t i = 0; i < count; ++i) {
      for (int c = 0; c < kChannels; ++c) planes[c][i] = static_cast<float>(in[i * kChannels + c]);
    }
  }
}

template <typename T>
PIPELINE_SIMD_INLINE void DeinterleaveChunk(const T* in, int channels, size_t count, size_t plane, float* out) {
  switch (channels) {
    case 1:
      return DeinterleaveChunk<1>(in, count, plane, out);
    case 3:
      return DeinterleaveChunk<3>(in, count, plane, out);
    default:
      for (int c = 0; c < channels; ++c) {
        for (size_t i = 0; i < count; ++i) {
          out[c * plane + i] = static_cast<float>(in[i * channels + c]);
        }
      }
  }
}

// WriteChwMapped's loops, for an image FitsChannelMaps takes.
PIPELINE_SIMD_INLINE void WriteChwMappedBody(const Image& image,
                                             const std::vector<ChannelMap>& maps, float* out) {
  const int channels = image.channels;
  const size_t pixels = image.pixel_count();
  // A chunk at a time, so every map reads what the copy just wrote from L1.
  constexpr size_t kChunk = 1024;
  for (size_t begin = 0; begin < pixels; begin += kChunk) {
    const size_t count = std::min(kChunk, pixels - begin);
    if (image.is_float()) {
      DeinterleaveChunk(image.f32.data() + begin * channels, channels, count, pixels, out + begin);
    } else {
      DeinterleaveChunk(image.u8.data() + begin * channels, channels, count, pixels, out + begin);
    }
    for (int c = 0; c < channels; ++c) {
      auto at = [c](const std::vector<float>& v) { return v.size() == 1 ? v[0] : v[c]; };
      float* chunk = out + c * pixels + begin;
      for (const ChannelMap& map : maps) {
        const float multiply = at(map.multiply), subtract = at(map.subtract),
                    divide = at(map.divide);
        // The same operations, in the same order, as the transform's Apply.
        for (size_t i = 0; i < count; ++i) chunk[i] = (chunk[i] * multiply - subtract) / divide;
      }
    }
  }
}

// The same loops compiled twice (pipeline/util/simd.h).
void WriteChwMappedBaseline(const Image& image, const std::vector<ChannelMap>& maps, float* out) {
  WriteChwMappedBody(image, maps, out);
}
PIPELINE_TARGET_AVX2 void WriteChwMappedAvx2(const Image& image,
                                             const std::vector<ChannelMap>& maps, float* out) {
  WriteChwMappedBody(image, maps, out);
}

// The maps applied to an image FitsChannelMaps takes, by the build the CPU
// runs best.
void WriteChwFitting(const Image& image, const std::vector<ChannelMap>& maps, float* out) {
  if (UseAvx2()) {
    WriteChwMappedAvx2(image, maps, out);
  } else {
    WriteChwMappedBaseline(image, maps, out);
  }
}

}  // namespace

void WriteChw(const Image& image, float* out) {
  // uint8 to [0, 1] is to_float's map: v * (1/255); the map's "- 0" and
  // "/ 1" change no bit.
  static const std::vector<ChannelMap> kToUnit = {
      ChannelMap{.multiply = {1.0f / 255.0f}, .takes_uint8 = true, .takes_float = false}};
  static const std::vector<ChannelMap> kAsIs;
  WriteChwFitting(image, image.is_float() ? kAsIs : kToUnit, out);
}

void WriteChwUint8(const Image& image, uint8_t* out) {
  const size_t pixels = image.pixel_count();
  const int channels = image.channels;
  const uint8_t* in = image.u8.data();
  for (int c = 0; c < channels; ++c) {
    uint8_t* plane = out + c * pixels;
    for (size_t i = 0; i < pixels; ++i) plane[i] = in[i * channels + c];
  }
}

bool WriteChwMapped(const Image& image, const std::vector<ChannelMap>& maps, float* out) {
  if (maps.empty()) {
    WriteChw(image, out);
    return true;
  }
  if (!FitsChannelMaps(image, maps)) return false;
  WriteChwFitting(image, maps, out);
  return true;
}

Loader::Loader(const Dataset* dataset, std::vector<const Transform*> transforms,
               LoaderOptions options)
    : dataset_(dataset), transforms_(std::move(transforms)), options_(std::move(options)) {
  options_.num_workers = std::max(1, options_.num_workers);
  options_.prefetch_batches = std::max(1, options_.prefetch_batches);
  fused_from_ = transforms_.size();
  while (fused_from_ > 0 && transforms_[fused_from_ - 1]->AsChannelMap()) --fused_from_;
  for (size_t i = fused_from_; i < transforms_.size(); ++i) {
    fused_maps_.push_back(*transforms_[i]->AsChannelMap());
  }
}

Loader::~Loader() { StopWorkers(); }

int64_t Loader::BatchesPerEpoch(int64_t samples) const {
  const int64_t b = options_.batch_size;
  return options_.drop_last ? samples / b : (samples + b - 1) / b;
}

void Loader::StopWorkers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
}

void Loader::StartEpoch(int64_t epoch, std::vector<int64_t> indices) {
  StopWorkers();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = false;
    epoch_ = epoch;
    num_jobs_ = BatchesPerEpoch(static_cast<int64_t>(indices.size()));
    indices_ = std::move(indices);
    next_job_ = 0;
    consumed_ = 0;
    ready_.clear();
    skipped_ = SkippedSamples();
  }
  {
    // A transform may reject a sample in one epoch's augmentation only.
    std::lock_guard<std::mutex> lock(bad_mutex_);
    known_bad_.clear();
  }
  for (int i = 0; i < options_.num_workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

void Loader::WorkerLoop() {
  while (true) {
    int64_t job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Work at most prefetch_batches ahead of the trainer, plus one batch in
      // progress per worker: memory stays bounded however slow training is.
      changed_.wait(lock, [&] {
        return stop_ || next_job_ >= num_jobs_ ||
               next_job_ < consumed_ + options_.prefetch_batches + options_.num_workers;
      });
      if (stop_ || next_job_ >= num_jobs_) return;
      job = next_job_++;
    }
    absl::StatusOr<Batch> batch = BuildBatch(job);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_.emplace(job, std::move(batch));
    }
    changed_.notify_all();
  }
}

absl::StatusOr<std::optional<Batch>> Loader::Next() {
  while (true) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (consumed_ >= num_jobs_) return std::nullopt;
    changed_.wait(lock, [&] { return ready_.count(consumed_) > 0; });
    auto node = ready_.extract(consumed_);
    ++consumed_;
    lock.unlock();
    changed_.notify_all();
    if (!node.mapped().ok()) return node.mapped().status();
    Batch batch = std::move(node.mapped()).value();
    // Counted here, as batches are taken, so the report covers exactly what
    // was trained on, not what the workers happened to prefetch.
    skipped_.count += static_cast<int64_t>(batch.skipped.size());
    for (SkippedSample& sample : batch.skipped) {
      skipped_.indices.push_back(sample.index);
      if (skipped_.first.size() < SkippedSamples::kMaxListed) {
        skipped_.first.push_back(std::move(sample));
      }
    }
    if (batch.labels.size(0) == 0) continue;  // kDrop, and nothing in it loaded
    return std::optional<Batch>(std::move(batch));
  }
}

at::Tensor Loader::BatchImages(int64_t n, int64_t channels, int64_t height, int64_t width,
                               at::ScalarType type) const {
  const std::vector<int64_t> sizes = {n, channels, height, width};
  if (options_.pin_memory) return at::empty(sizes, PinnedIf(true, type));
  std::lock_guard<std::mutex> lock(pool_mutex_);
  for (at::Tensor& pooled : image_pool_) {
    // No batch, view or saved activation of the trainer's uses this memory,
    // and none can start to except through the pool.
    if (IsOnlyReference(pooled) && pooled.sizes() == at::IntArrayRef(sizes) &&
        pooled.scalar_type() == type) {
      return pooled;
    }
  }
  at::Tensor images = at::empty(sizes, type);
  const size_t capacity =
      static_cast<size_t>(options_.prefetch_batches + options_.num_workers) + 2;
  if (image_pool_.size() < capacity) {
    image_pool_.push_back(images);
  } else {
    // Full of batches still in use (another size, or held on to): replace
    // one that is free, so the pool follows a change of shape.
    for (at::Tensor& pooled : image_pool_) {
      if (IsOnlyReference(pooled)) {
        pooled = images;
        break;
      }
    }
  }
  return images;
}

bool Loader::IsKnownBad(int64_t index) const {
  std::lock_guard<std::mutex> lock(bad_mutex_);
  return known_bad_.count(index) > 0;
}

void Loader::MarkBad(int64_t index) const {
  std::lock_guard<std::mutex> lock(bad_mutex_);
  known_bad_.insert(index);
}

absl::StatusOr<Sample> Loader::LoadReplacement(int64_t position, const absl::Status& error,
                                               bool* mapped_in_write) const {
  const int64_t n = static_cast<int64_t>(indices_.size());
  for (int64_t step = 1; step < n; ++step) {
    const int64_t index = indices_[(position + step) % n];
    if (IsKnownBad(index)) continue;
    absl::StatusOr<Sample> sample = LoadForBatch(index, mapped_in_write);
    if (sample.ok()) return sample;
    MarkBad(index);
  }
  return NothingLoads(n, error);
}

absl::StatusOr<Sample> Loader::FirstSample(int64_t epoch) const {
  if (dataset_->size() == 0) return absl::OutOfRangeError("the dataset holds no samples");
  absl::Status first_error;
  for (int64_t index = 0; index < dataset_->size(); ++index) {
    absl::StatusOr<Sample> sample = LoadSample(index, epoch);
    if (sample.ok()) return sample;
    const absl::Status error = NamedSampleError(index, sample.status());
    if (options_.on_bad_sample == BadSamplePolicy::kFail) return error;
    if (first_error.ok()) first_error = error;
  }
  return NothingLoads(dataset_->size(), first_error);
}

absl::StatusOr<Sample> Loader::LoadSample(int64_t index, int64_t epoch) const {
  return LoadSampleUpTo(index, epoch, transforms_.size());
}

absl::StatusOr<Sample> Loader::LoadSampleUpTo(int64_t index, int64_t epoch, size_t end) const {
  SampleRandom random(options_.seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index));
  const RegionCrop* crop = end > 0 ? transforms_[0]->AsRegionCrop() : nullptr;
  absl::StatusOr<Sample> sample;
  size_t first = 0;
  if (crop != nullptr) {
    // The crop picks its region from the image's size, and the dataset
    // decodes only what that region needs.
    ImageRegion region;
    sample = dataset_->GetRegion(
        index, [&](int height, int width) { return crop->PlanRegion(height, width, random); },
        &region);
    if (!sample.ok()) return sample.status();
    if (absl::Status status = crop->ApplyToRegion(sample->image, region); !status.ok()) {
      return status;
    }
    first = 1;
  } else {
    sample = dataset_->Get(index);
    if (!sample.ok()) return sample.status();
  }
  for (size_t i = first; i < end; ++i) {
    if (absl::Status status = transforms_[i]->Apply(sample->image, random); !status.ok()) {
      return status;
    }
  }
  if (!options_.label_map.empty()) sample->label = options_.label_map[sample->label];
  return sample;
}

absl::StatusOr<Sample> Loader::LoadForBatch(int64_t index, bool* mapped_in_write) const {
  absl::StatusOr<Sample> sample = LoadSampleUpTo(index, epoch_, fused_from_);
  if (!sample.ok()) return sample;
  *mapped_in_write = FitsChannelMaps(sample->image, fused_maps_);
  if (*mapped_in_write) return sample;
  // Not what the maps take (a uint8 image reaching normalize, a channel
  // count that does not fit): the transforms themselves run, and say why.
  // They draw no random numbers, so a fresh generator changes nothing.
  SampleRandom random(options_.seed, static_cast<uint64_t>(epoch_), static_cast<uint64_t>(index));
  for (size_t t = fused_from_; t < transforms_.size(); ++t) {
    if (absl::Status status = transforms_[t]->Apply(sample->image, random); !status.ok()) {
      return status;
    }
  }
  return sample;
}

bool Loader::LeavesMapsToDevice(const Image& image, bool mapped_in_write) const {
  return options_.channel_maps_on_device && mapped_in_write && !fused_maps_.empty() &&
         !image.is_float();
}

absl::StatusOr<Batch> Loader::BuildBatch(int64_t job) const {
  // indices_ and epoch_ do not change while workers run.
  const int64_t begin = job * options_.batch_size;
  const int64_t end =
      std::min<int64_t>(begin + options_.batch_size, static_cast<int64_t>(indices_.size()));
  Batch batch;
  batch.labels = at::empty({end - begin}, PinnedIf(options_.pin_memory, at::kLong));
  int64_t* labels = batch.labels.data_ptr<int64_t>();
  std::string batch_shape;
  int64_t first_index = -1;  // the sample in row 0, for the size-mismatch message
  int64_t row = 0;
  for (int64_t i = begin; i < end; ++i) {
    int64_t index = indices_[i];
    bool mapped_in_write = false;
    absl::StatusOr<Sample> sample = LoadForBatch(index, &mapped_in_write);
    if (!sample.ok()) {
      const absl::Status error = NamedSampleError(index, sample.status());
      if (options_.on_bad_sample == BadSamplePolicy::kFail) return error;
      MarkBad(index);
      batch.skipped.push_back({index, std::string(error.message())});
      if (options_.on_bad_sample == BadSamplePolicy::kDrop) continue;
      sample = LoadReplacement(i, error, &mapped_in_write);
      if (!sample.ok()) return sample.status();
    }
    const Image& image = sample->image;
    if (row == 0) {
      batch_shape = image.ShapeString();
      first_index = index;
      if (LeavesMapsToDevice(image, mapped_in_write)) batch.device_maps = fused_maps_;
      batch.images =
          BatchImages(end - begin, image.channels, image.height, image.width,
                      batch.device_maps.empty() ? at::kFloat : at::kByte);
    } else if (image.ShapeString() != batch_shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sample ", index, " is ", image.ShapeString(), " (HxWxC) after its transforms but sample ",
          first_index, " of the same batch is ", batch_shape,
          "; add a resize and center_crop (or random_resized_crop) transform so every image "
          "has one size"));
    }
    if (!batch.device_maps.empty()) {
      if (!LeavesMapsToDevice(image, mapped_in_write)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sample ", index, " is not uint8 before its to_float/normalize transforms but sample ",
            first_index, " of the same batch is; set normalize_on_device: false"));
      }
      WriteChwUint8(image, batch.images.data_ptr<uint8_t>() + row * batch.images.stride(0));
      labels[row++] = sample->label;
      continue;
    }
    float* out = batch.images.data_ptr<float>() + row * batch.images.stride(0);
    if (mapped_in_write) {
      WriteChwMapped(image, fused_maps_, out);
    } else {
      WriteChw(image, out);
    }
    labels[row] = sample->label;
    ++row;
  }
  if (row < end - begin) {
    // Dropped samples: the batch is the rows that loaded.
    batch.labels = batch.labels.narrow(0, 0, row);
    if (row > 0) batch.images = batch.images.narrow(0, 0, row);
  }
  return batch;
}

}  // namespace pipeline
