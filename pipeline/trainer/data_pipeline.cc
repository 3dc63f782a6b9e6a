#include "pipeline/trainer/data_pipeline.h"

#include <algorithm>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace {

absl::Status Prefixed(const std::string& path, const std::string& field,
                      const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(path, ".", field, ": ", status.message()));
}

// Validation labels follow the training classes by name.
absl::StatusOr<std::vector<int64_t>> MapClasses(const std::vector<std::string>& train,
                                                const std::vector<std::string>& validation) {
  std::map<std::string, int64_t> train_index;
  for (size_t i = 0; i < train.size(); ++i) train_index[train[i]] = static_cast<int64_t>(i);
  std::vector<int64_t> map;
  for (const std::string& name : validation) {
    auto it = train_index.find(name);
    if (it == train_index.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "validation_data.dataset: class \"", name,
          "\" is in the validation data but not in the training data (training classes: ",
          absl::StrJoin(train, ", "), "); add it to the training data or remove it"));
    }
    map.push_back(it->second);
  }
  return map;
}

LoaderOptions LoaderOptionsOf(const DataConfig& config, const PipelineConfig& pipeline,
                              const Strategy& strategy, bool training) {
  LoaderOptions options;
  options.batch_size = config.batch_size();
  // Loader threads take the cores compute leaves, at least one; with the
  // model on CUDA the CPU only loads, so this process's share of the cores.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const bool on_cuda = strategy.device().is_cuda();
  options.num_workers = config.num_workers() > 0 ? config.num_workers()
                        : on_cuda              ? std::max(1, pipeline.trainer().threads())
                                               : std::max(1, cores - pipeline.trainer().threads());
  options.prefetch_batches = config.prefetch_batches();
  options.drop_last = config.drop_last();
  options.pin_memory = config.pin_memory() && on_cuda;
  options.channel_maps_on_device = config.normalize_on_device() && on_cuda;
  options.seed = pipeline.trainer().seed();
  if (config.on_bad_sample() == DataConfig::SKIP) {
    options.on_bad_sample = training ? BadSamplePolicy::kReplace : BadSamplePolicy::kDrop;
  }
  return options;
}

}  // namespace

absl::StatusOr<DataPipeline> BuildData(const std::string& path, const DataConfig& config,
                                       const PipelineConfig& pipeline, Strategy& strategy,
                                       const std::vector<std::string>& training_classes) {
  DataPipeline data;
  const bool training = path == "train_data";
  const uint64_t seed = pipeline.trainer().seed();
  auto dataset = Registry<Dataset>::Global().Create(
      config.dataset(), {training ? "train" : "validation", seed});
  if (!dataset.ok()) return Prefixed(path, "dataset", dataset.status());
  data.dataset = std::move(*dataset);
  if (data.dataset->size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".dataset: holds no samples"));
  }
  std::vector<const Transform*> transforms;
  for (int i = 0; i < config.transforms_size(); ++i) {
    auto transform = Registry<Transform>::Global().Create(config.transforms(i), {});
    if (!transform.ok()) {
      return Prefixed(path, absl::StrCat("transforms[", i, "]"), transform.status());
    }
    transforms.push_back(transform->get());
    data.transforms.push_back(std::move(*transform));
  }
  // Validation samplers give the order of the whole set, which Evaluate
  // splits between the ranks without padding, so every sample counts once.
  auto sampler = Registry<Sampler>::Global().Create(
      config.sampler(),
      {seed, training ? strategy.rank() : 0, training ? strategy.world_size() : 1});
  if (!sampler.ok()) return Prefixed(path, "sampler", sampler.status());
  data.sampler = std::move(*sampler);
  LoaderOptions options = LoaderOptionsOf(config, pipeline, strategy, training);
  if (!training) {
    ASSIGN_OR_RETURN(options.label_map,
                     MapClasses(training_classes, data.dataset->class_names()));
  }
  data.loader = std::make_unique<Loader>(data.dataset.get(), transforms, options);
  const int64_t classes = static_cast<int64_t>(data.dataset->class_names().size());
  for (int i = 0; i < config.batch_transforms_size(); ++i) {
    auto transform = Registry<BatchTransform>::Global().Create(config.batch_transforms(i),
                                                               {classes});
    if (!transform.ok()) {
      return Prefixed(path, absl::StrCat("batch_transforms[", i, "]"), transform.status());
    }
    data.batch_transforms.push_back(std::move(*transform));
  }
  return data;
}

}  // namespace pipeline

