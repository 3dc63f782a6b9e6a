// dataset `synthetic`: random images of a fixed shape, made on demand, so a
// benchmark measures the pipeline and the model, not a disk.
//
//   train_data {
//     dataset {
//       name: "synthetic"
//       options {
//         [type.googleapis.com/pipeline.SyntheticOptions] {
//           num_samples: 512 height: 224 width: 224 channels: 3 num_classes: 2
//         }
//       }
//     }
//   }

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/interfaces/random.h"
#include "plugins/datasets/synthetic/synthetic.pb.h"

namespace pipeline {
namespace {

class SyntheticDataset : public Dataset {
 public:
  SyntheticDataset(const SyntheticOptions& options, uint64_t seed)
      : options_(options), seed_(seed) {
    for (int i = 0; i < options.num_classes(); ++i) class_names_.push_back(absl::StrCat(i));
  }

  int64_t size() const override { return options_.num_samples(); }

  absl::StatusOr<Sample> Get(int64_t index) const override {
    if (index < 0 || index >= size()) {
      return absl::OutOfRangeError(absl::StrCat("sample ", index, " of ", size()));
    }
    Sample sample;
    sample.label = index % options_.num_classes();
    Image& image = sample.image;
    image.height = options_.height();
    image.width = options_.width();
    image.channels = options_.channels();
    image.u8.resize(image.pixel_count() * image.channels);
    SampleRandom random(seed_, /*epoch=*/0, static_cast<uint64_t>(index));
    const double signal = options_.class_signal();
    const double level =
        options_.num_classes() > 1 ? 255.0 * sample.label / (options_.num_classes() - 1) : 127.5;
    for (uint8_t& pixel : image.u8) {
      const double value = signal * level + (1.0 - signal) * 255.0 * random.Uniform();
      pixel = static_cast<uint8_t>(std::clamp(value, 0.0, 255.0));
    }
    return sample;
  }

  const std::vector<std::string>& class_names() const override { return class_names_; }

 private:
  SyntheticOptions options_;
  uint64_t seed_;
  std::vector<std::string> class_names_;
};

absl::Status ValidateSynthetic(const SyntheticOptions& options) {
  if (options.num_samples() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_samples: ", options.num_samples(), "; must be at least 1"));
  }
  if (options.height() <= 0 || options.width() <= 0 || options.channels() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("height, width, channels: ", options.height(),
                                                   "x", options.width(), "x", options.channels(),
                                                   "; each must be at least 1"));
  }
  if (options.num_classes() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_classes: ", options.num_classes(), "; must be at least 1"));
  }
  if (options.class_signal() < 0 || options.class_signal() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("class_signal: ", options.class_signal(), "; must be in [0, 1]"));
  }
  return absl::OkStatus();
}

PIPELINE_REGISTER_PLUGIN(Dataset, "synthetic", SyntheticOptions,
                         "Seeded random images of a fixed shape, for benchmarks and tests",
                         [](const SyntheticOptions& options, const DatasetContext& context)
                             -> absl::StatusOr<std::unique_ptr<Dataset>> {
                           if (context.inference) {
                             return absl::UnimplementedError(
                                 "synthetic makes its images up; it reads no files for "
                                 "inference");
                           }
                           return std::make_unique<SyntheticDataset>(
                               options, context.seed + options.seed_offset());
                         },
                         ValidateSynthetic);

}  // namespace
}  // namespace pipeline
