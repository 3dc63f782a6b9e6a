#include "pipeline/data/loader.h"

#include <algorithm>

#include "ATen/ops/empty.h"
#include "absl/strings/str_cat.h"

namespace pipeline {

void WriteChw(const Image& image, float* out) {
  const size_t pixels = image.pixel_count();
  const int channels = image.channels;
  for (int c = 0; c < channels; ++c) {
    float* plane = out + c * pixels;
    if (image.is_float()) {
      const float* in = image.f32.data() + c;
      for (size_t i = 0; i < pixels; ++i) plane[i] = in[i * channels];
    } else {
      const uint8_t* in = image.u8.data() + c;
      constexpr float kScale = 1.0f / 255.0f;
      for (size_t i = 0; i < pixels; ++i) plane[i] = in[i * channels] * kScale;
    }
  }
}

bool WriteChwMapped(const Image& image, const std::vector<ChannelMap>& maps, float* out) {
  if (maps.empty()) {
    WriteChw(image, out);
    return true;
  }
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
  const size_t pixels = image.pixel_count();
  // A chunk at a time, so every map reads what the copy just wrote from L1.
  constexpr size_t kChunk = 1024;
  for (int c = 0; c < channels; ++c) {
    auto at = [c](const std::vector<float>& v) { return v.size() == 1 ? v[0] : v[c]; };
    for (size_t begin = 0; begin < pixels; begin += kChunk) {
      const size_t count = std::min(kChunk, pixels - begin);
      float* chunk = out + c * pixels + begin;
      if (image.is_float()) {
        const float* in = image.f32.data() + begin * channels + c;
        for (size_t i = 0; i < count; ++i) chunk[i] = in[i * channels];
      } else {
        const uint8_t* in = image.u8.data() + begin * channels + c;
        for (size_t i = 0; i < count; ++i) chunk[i] = static_cast<float>(in[i * channels]);
      }
      for (const ChannelMap& map : maps) {
        const float multiply = at(map.multiply), subtract = at(map.subtract),
                    divide = at(map.divide);
        // The same operations, in the same order, as the transform's Apply.
        for (size_t i = 0; i < count; ++i) chunk[i] = (chunk[i] * multiply - subtract) / divide;
      }
    }
  }
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
  std::unique_lock<std::mutex> lock(mutex_);
  if (consumed_ >= num_jobs_) return std::nullopt;
  changed_.wait(lock, [&] { return ready_.count(consumed_) > 0; });
  auto node = ready_.extract(consumed_);
  ++consumed_;
  lock.unlock();
  changed_.notify_all();
  if (!node.mapped().ok()) return node.mapped().status();
  return std::optional<Batch>(std::move(node.mapped()).value());
}

absl::StatusOr<Sample> Loader::LoadSample(int64_t index, int64_t epoch) const {
  return LoadSampleUpTo(index, epoch, transforms_.size());
}

absl::StatusOr<Sample> Loader::LoadSampleUpTo(int64_t index, int64_t epoch, size_t end) const {
  absl::StatusOr<Sample> sample = dataset_->Get(index);
  if (!sample.ok()) return sample.status();
  SampleRandom random(options_.seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index));
  for (size_t i = 0; i < end; ++i) {
    if (absl::Status status = transforms_[i]->Apply(sample->image, random); !status.ok()) {
      return status;
    }
  }
  if (!options_.label_map.empty()) sample->label = options_.label_map[sample->label];
  return sample;
}

absl::StatusOr<Batch> Loader::BuildBatch(int64_t job) const {
  // indices_ and epoch_ do not change while workers run.
  const int64_t begin = job * options_.batch_size;
  const int64_t end =
      std::min<int64_t>(begin + options_.batch_size, static_cast<int64_t>(indices_.size()));
  Batch batch;
  batch.labels = at::empty({end - begin}, at::kLong);
  int64_t* labels = batch.labels.data_ptr<int64_t>();
  std::string batch_shape;
  for (int64_t i = begin; i < end; ++i) {
    const int64_t index = indices_[i];
    absl::StatusOr<Sample> sample = LoadSampleUpTo(index, epoch_, fused_from_);
    if (!sample.ok()) {
      return absl::Status(sample.status().code(),
                          absl::StrCat("sample ", index, ": ", sample.status().message()));
    }
    Image& image = sample->image;
    if (i == begin) {
      batch_shape = image.ShapeString();
      batch.images = at::empty({end - begin, image.channels, image.height, image.width}, at::kFloat);
    } else if (image.ShapeString() != batch_shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sample ", index, " is ", image.ShapeString(), " (HxWxC) after its transforms but sample ",
          indices_[begin], " of the same batch is ", batch_shape,
          "; add a resize and center_crop (or random_resized_crop) transform so every image "
          "has one size"));
    }
    float* out = batch.images.data_ptr<float>() + (i - begin) * batch.images.stride(0);
    if (!WriteChwMapped(image, fused_maps_, out)) {
      // Not what the maps take (a uint8 image reaching normalize, a channel
      // count that does not fit): the transforms themselves say why. They
      // draw no random numbers, so a fresh generator changes nothing.
      SampleRandom random(options_.seed, static_cast<uint64_t>(epoch_),
                          static_cast<uint64_t>(index));
      for (size_t t = fused_from_; t < transforms_.size(); ++t) {
        if (absl::Status status = transforms_[t]->Apply(image, random); !status.ok()) {
          return absl::Status(status.code(), absl::StrCat("sample ", index, ": ", status.message()));
        }
      }
      WriteChw(image, out);
    }
    labels[i - begin] = sample->label;
  }
  return batch;
}

}  // namespace pipeline
