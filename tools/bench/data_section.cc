// data: the data pipeline alone, images/s of one loader thread: the JPEG
// ImageFolder at 224 (decoding each epoch, then kept decoded) and
// Fashion-MNIST.

#include "absl/strings/str_format.h"
#include "pipeline/config/config_loader.h"
#include "tools/bench/bench_configs.h"
#include "tools/bench/bench_sections.h"
#include "tools/bench/loader_rate.h"
#include "tools/bench/or_die.h"

namespace pipeline {
namespace bench {
namespace {

void AddJpegRow(BenchContext& context) {
  context.jpeg_data = DataPipelineRate(context.jpeg, context.options.min_seconds);
  context.table.Add({absl::StrFormat("data pipeline, 1 thread: JPEG 500x375 -> %s (%s)",
                                     TransformNames(context.jpeg), context.jpeg_data->sample_shape),
                     absl::StrFormat("%.1f", context.jpeg_data->images_per_sec),
                     Ratio(context.jpeg_data->images_per_sec, context.compute_ceiling),
                     "compute ceiling"});
}

// Every image of the corpus kept (0.54 MiB each) after the untimed first
// epoch.
void AddKeptDecodedRow(BenchContext& context) {
  PipelineConfig kept = context.jpeg;
  const absl::Status set = ApplyOverride(
      "train_data.dataset.options.cache_decoded_mb=4096",
      [](const std::string&, const std::string&) { return nullptr; }, &kept);
  if (!set.ok()) Die(set);
  const DataResult kept_data = LoaderRate(kept, *TrainDataset(kept), context.options.min_seconds,
                                          /*warm_whole_epoch=*/true);
  context.table.Add({"data pipeline, 1 thread: the same after the first epoch with image_folder "
                     "cache_decoded_mb (every image kept decoded)",
                     absl::StrFormat("%.1f", kept_data.images_per_sec),
                     Ratio(kept_data.images_per_sec, context.jpeg_data->images_per_sec),
                     "JPEG data pipeline"});
}

void AddFashionMnistRow(BenchContext& context) {
  const PipelineConfig fashion_mnist = LoadResolved(context.options.fashion_mnist_config);
  context.fashion_mnist_data = DataPipelineRate(fashion_mnist, context.options.min_seconds);
  context.table.Add(
      {absl::StrFormat("data pipeline, 1 thread: Fashion-MNIST %s (in memory) + normalize",
                       context.fashion_mnist_data->sample_shape),
       absl::StrFormat("%.1f", context.fashion_mnist_data->images_per_sec), "-", "-"});
}

}  // namespace

void RunDataSection(BenchContext& context) {
  AddJpegRow(context);
  AddKeptDecodedRow(context);
  AddFashionMnistRow(context);
}

}  // namespace bench
}  // namespace pipeline
