// kernels: what comes after decoding -- random-resized-crop to 224, flip,
// uint8 to float, normalize, into the batch -- on images decoded once, both
// ways on one thread: through the runner's transforms and loader
// (image_ops' bilinear resize and the fused batch write), and through
// ATen's kernels as torchvision's tensor transforms call them
// (upsample_bilinear2d without antialias, rounded back to uint8 values,
// then flip and normalize as tensor ops), on crops random_resized_crop
// plans.

#include <cstdint>
#include <memory>

#include "ATen/Parallel.h"
#include "ATen/TensorOperators.h"
#include "ATen/ops/empty.h"
#include "ATen/ops/from_blob.h"
#include "ATen/ops/tensor.h"
#include "ATen/ops/upsample_bilinear2d.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pipeline/interfaces/random.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/registry/registry.h"
#include "tools/bench/bench_sections.h"
#include "tools/bench/in_memory_dataset.h"
#include "tools/bench/loader_rate.h"
#include "tools/bench/or_die.h"
#include "tools/bench/timing.h"

namespace pipeline {
namespace bench {
namespace {

// The config's first transform, which plans the crops; the bench stops when
// it is not a region crop.
std::unique_ptr<Transform> CropPlanner(const BenchContext& context) {
  auto crop = OrDie(
      Registry<Transform>::Global().Create(context.jpeg.train_data().transforms(0), {}));
  if (crop->AsRegionCrop() == nullptr) {
    Die(absl::InvalidArgumentError(absl::StrCat(
        context.options.jpeg_config, ": the kernels section needs a region crop "
        "(random_resized_crop) as the first training transform")));
  }
  return crop;
}

// Images per second of the ATen way, 1 thread.
double AtenRate(const BenchContext& context, const DecodedInMemory& decoded) {
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const int64_t batch_size = context.jpeg.train_data().batch_size();
  const at::Tensor mean = at::tensor({0.485f, 0.456f, 0.406f}).view({1, 3, 1, 1});
  const at::Tensor deviation = at::tensor({0.229f, 0.224f, 0.225f}).view({1, 3, 1, 1});
  const std::unique_ptr<Transform> crop = CropPlanner(context);
  const RegionCrop* planner = crop->AsRegionCrop();
  size_t next = 0;
  uint64_t sample = 0;
  auto batch = [&] {
    at::Tensor out = at::empty({batch_size, 3, 224, 224}, at::kFloat);
    for (int64_t i = 0; i < batch_size; ++i) {
      const Image& image = decoded.samples()[next++ % decoded.samples().size()].image;
      SampleRandom random(context.jpeg.trainer().seed(), 0, sample++);
      const ImageRegion r = planner->PlanRegion(image.height, image.width, random);
      at::Tensor pixels =
          at::from_blob(const_cast<uint8_t*>(image.u8.data()), {image.height, image.width, 3},
                        at::kByte)
              .narrow(0, r.top, r.height)
              .narrow(1, r.left, r.width)
              .permute({2, 0, 1})
              .unsqueeze(0)
              .to(at::kFloat);
      at::Tensor resized =
          at::upsample_bilinear2d(pixels, {224, 224}, /*align_corners=*/false).round_().clamp_(0,
                                                                                             255);
      if (random.Bernoulli(0.5)) resized = resized.flip({3});
      out[i].copy_(((resized / 255 - mean) / deviation)[0]);
    }
  };
  const double rate = StepsPerSecond(context.options.min_seconds, batch) * batch_size;
  at::set_num_threads(threads);
  return rate;
}

}  // namespace

void RunKernelsSection(BenchContext& context) {
  const auto decoded = OrDie(DecodedInMemory::Decode(*TrainDataset(context.jpeg), 200));
  const double image_ops =
      LoaderRate(context.jpeg, *decoded, context.options.min_seconds).images_per_sec;
  const double aten = AtenRate(context, *decoded);
  context.table.Add({"after decoding, 1 thread: random_resized_crop 224 + flip + normalize into "
                     "the batch, runner's transforms and loader (image_ops)",
                     absl::StrFormat("%.1f", image_ops), Ratio(image_ops, aten), "ATen kernels"});
  context.table.Add({"after decoding, 1 thread: the same with ATen's upsample_bilinear2d, flip "
                     "and tensor arithmetic",
                     absl::StrFormat("%.1f", aten), "1.00", "ATen kernels"});
}

}  // namespace bench
}  // namespace pipeline
