// transforms: each augmentation alone on 224x224 RGB images, 1 thread,
// against the same torchvision transform on PIL images
// (tools/bench_reference.py --transforms), then the JPEG training pipeline
// with rand_augment against the same in PIL + torchvision.

#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ATen/Parallel.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pipeline/config/config_loader.h"
#include "pipeline/interfaces/random.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/registry/registry.h"
#include "tools/bench/bench_configs.h"
#include "tools/bench/bench_sections.h"
#include "tools/bench/in_memory_dataset.h"
#include "tools/bench/loader_rate.h"
#include "tools/bench/or_die.h"
#include "tools/bench/timing.h"

namespace pipeline {
namespace bench {
namespace {

// The runner's spec, torchvision's call, as the row says.
struct TransformCase {
  const char* label;  // also bench_reference.py's key
  const char* spec;   // a transforms { } body
};
constexpr TransformCase kTransformCases[] = {
    {"color_jitter", R"pb(name: "color_jitter" options { [type.googleapis.com/pipeline.ColorJitterOptions] { brightness: 0.4 contrast: 0.4 saturation: 0.4 hue: 0.1 } })pb"},
    {"random_erasing", R"pb(name: "random_erasing" options { [type.googleapis.com/pipeline.RandomErasingOptions] { p: 1 } })pb"},
    {"trivial_augment_wide", R"pb(name: "trivial_augment_wide")pb"},
    {"rand_augment", R"pb(name: "rand_augment")pb"},
    {"random_rotation", R"pb(name: "random_rotation" options { [type.googleapis.com/pipeline.RandomRotationOptions] { degrees: 30 } })pb"},
    {"random_affine", R"pb(name: "random_affine" options { [type.googleapis.com/pipeline.RandomAffineOptions] { degrees: 10 translate: [0.1, 0.1] scale: [0.9, 1.1] shear: 5 } })pb"},
    {"random_crop_padding_4", R"pb(name: "random_crop" options { [type.googleapis.com/pipeline.RandomCropOptions] { size: 224 padding: 4 } })pb"},
    {"gaussian_blur", R"pb(name: "gaussian_blur" options { [type.googleapis.com/pipeline.GaussianBlurOptions] { kernel_size: 23 sigma: [0.1, 2.0] } })pb"},
};
constexpr char kTorchvisionCalls[] =
    "ColorJitter(0.4, 0.4, 0.4, 0.1) | RandomErasing(p=1) on a uint8 tensor | "
    "TrivialAugmentWide() | RandAugment() | RandomRotation(30) | "
    "RandomAffine(10, (0.1, 0.1), (0.9, 1.1), 5) | RandomCrop(224, padding=4) | "
    "GaussianBlur(23, (0.1, 2.0))";

// The transform a transforms { } body describes.
std::unique_ptr<Transform> TransformOf(const std::string& spec_text) {
  PluginConfig spec;
  if (absl::Status parsed = ParseTextProto(spec_text, "transform", &spec); !parsed.ok()) {
    Die(parsed);
  }
  return OrDie(Registry<Transform>::Global().Create(spec, {}));
}

// The first `count` corpus images, resized to 224x224 by the runner's
// resize transform.
std::vector<Image> Images224(const PipelineConfig& config, int count) {
  const auto decoded = OrDie(DecodedInMemory::Decode(*TrainDataset(config), count));
  auto resizer = TransformOf(
      R"pb(name: "resize" options { [type.googleapis.com/pipeline.ResizeOptions] { height: 224 width: 224 } })pb");
  std::vector<Image> images;
  for (const Sample& sample : decoded->samples()) {
    Image image = sample.image;
    SampleRandom random(0, 0, images.size());
    if (absl::Status status = resizer->Apply(image, random); !status.ok()) Die(status);
    images.push_back(std::move(image));
  }
  return images;
}

// Images per second of `spec` applied to copies of `images`, 1 thread (the
// copy, 150 KB, is part of each).
double TransformRate(const std::string& spec_text, const std::vector<Image>& images,
                     double min_seconds) {
  auto transform = TransformOf(spec_text);
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  uint64_t sample = 0;
  constexpr int kBatch = 32;
  const double rate = StepsPerSecond(min_seconds, [&] {
    for (int i = 0; i < kBatch; ++i) {
      Image image = images[sample % images.size()];
      SampleRandom random(7, 0, sample++);
      if (absl::Status status = transform->Apply(image, random); !status.ok()) Die(status);
    }
  }) * kBatch;
  at::set_num_threads(threads);
  return rate;
}

// torchvision's rate for each case and for the whole JPEG pipeline
// ("jpeg_rand_augment") from bench_reference.py --transforms; what it did
// not measure is missing, with the reason printed.
std::map<std::string, double> TorchvisionTransformRates(const BenchContext& context) {
  std::map<std::string, double> rates;
  ProcessResult python = RunChild(context, {context.options.python, "tools/bench_reference.py",
                                            "--transforms", "--jpeg_root=" + context.corpus});
  for (const TransformCase& c : kTransformCases) {
    if (auto rate = JsonNumber(python.output, "transform_images_per_sec", c.label)) {
      rates[c.label] = *rate;
    }
  }
  if (auto rate = JsonNumber(python.output, "transform_images_per_sec",
                             "jpeg_rand_augment_images_per_sec")) {
    rates["jpeg_rand_augment"] = *rate;
  }
  if (python.exit_code != 0 || rates.empty()) {
    std::cerr << "bench: tools/bench_reference.py --transforms failed:\n"
              << Tail(python.output) << "\n";
  }
  return rates;
}

void AddTransformRows(BenchContext& context, const std::vector<Image>& images,
                      const std::map<std::string, double>& torchvision) {
  for (const TransformCase& c : kTransformCases) {
    const double rate = TransformRate(c.spec, images, context.options.min_seconds);
    const auto reference = torchvision.find(c.label);
    context.table.Add(
        {absl::StrCat("transform alone, 1 thread, 224x224 RGB: ", c.label),
         absl::StrFormat("%.1f", rate),
         reference == torchvision.end() ? "-" : Ratio(rate, reference->second),
         reference == torchvision.end()
             ? "torchvision: not measured"
             : absl::StrFormat("torchvision 0.14 on PIL (%.1f/s)", reference->second)});
  }
  context.table.Add({absl::StrCat("  (torchvision's, in that order: ", kTorchvisionCalls, ")"),
                     "-", "-", "-"});
}

// The whole JPEG training pipeline with RandAugment in the place of
// trivial_augment_wide, against the same in PIL + torchvision.
void AddRandAugmentPipelineRow(BenchContext& context,
                               const std::map<std::string, double>& torchvision) {
  PipelineConfig rand_augment = context.jpeg;
  bool replaced = false;
  for (PluginConfig& transform : *rand_augment.mutable_train_data()->mutable_transforms()) {
    if (transform.name() != "trivial_augment_wide") continue;
    transform.set_name("rand_augment");
    transform.clear_options();
    replaced = true;
  }
  const std::string label =
      absl::StrCat("data pipeline, 1 thread: JPEG 500x375 -> ", TransformNames(rand_augment));
  if (!replaced) {
    context.table.Add(
        {label, "skipped: the JPEG config has no trivial_augment_wide to replace", "-", "-"});
    return;
  }
  const double rate = DataPipelineRate(rand_augment, context.options.min_seconds).images_per_sec;
  const auto reference = torchvision.find("jpeg_rand_augment");
  context.table.Add(
      {label, absl::StrFormat("%.1f", rate),
       reference == torchvision.end() ? "-" : Ratio(rate, reference->second),
       reference == torchvision.end()
           ? "PIL + torchvision: not measured"
           : absl::StrFormat("PIL + torchvision, RandAugment() (%.1f/s)", reference->second)});
}

}  // namespace

void RunTransformsSection(BenchContext& context) {
  const std::vector<Image> images = Images224(context.jpeg, 64);
  const std::map<std::string, double> torchvision = TorchvisionTransformRates(context);
  AddTransformRows(context, images, torchvision);
  AddRandAugmentPipelineRow(context, torchvision);
}

}  // namespace bench
}  // namespace pipeline
