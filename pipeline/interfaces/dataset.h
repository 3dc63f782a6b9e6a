#ifndef PIPELINE_INTERFACES_DATASET_H_
#define PIPELINE_INTERFACES_DATASET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/image.h"
#include "pipeline/registry/registry.h"

namespace pipeline {

// A finite, indexable set of labelled images. Get() is called from several
// loader threads at once and must be thread-safe.
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual absl::StatusOr<Sample> Get(int64_t index) const = 0;
  // Get() for a caller that will use only part of the image (a crop):
  // `plan` is called once, with the image's full height and width, before
  // its pixels are decoded, and returns that part; *region_in_image is set
  // to where the part lies in the image returned. A dataset of encoded
  // files may decode only what covers it, but the pixels there must be
  // exactly Get()'s. The default is Get(), with the plan applied to its
  // image.
  virtual absl::StatusOr<Sample> GetRegion(int64_t index, const RegionPlan& plan,
                                           ImageRegion* region_in_image) const {
    absl::StatusOr<Sample> sample = Get(index);
    if (sample.ok()) *region_in_image = plan(sample->image.height, sample->image.width);
    return sample;
  }
  // Class names, indexed by label.
  virtual const std::vector<std::string>& class_names() const = 0;
  // Where sample `index` comes from, as its user knows it (a file's path):
  // predict prints it beside the sample's prediction.
  virtual std::string SampleName(int64_t index) const { return absl::StrCat("sample ", index); }
};

// The label of a sample whose class is unknown (an image given to predict
// outside any folder named after a class).
inline constexpr int64_t kUnknownLabel = -1;

// Inference (tools/predict): the dataset of a trained model's config reads
// the files a user names, as it read its own data in training (the same
// decoding, the same options), instead of the data its options name.
struct InferenceInput {
  // Files and folders as given on the command line; which files a folder
  // holds is the dataset's to say (image_folder: its images, recursively).
  std::vector<std::string> paths;
  // The trained model's classes, by label: class_names() returns them,
  // and a sample whose class the dataset can tell (image_folder: a folder
  // named after it) gets its label; every other sample kUnknownLabel.
  std::vector<std::string> class_names;
  // 1 or 3: decode to this many channels, whatever the options say (predict
  // asks again this way when the configured decoding does not give the
  // model's channels). 0: as the options say.
  int channels = 0;
};

struct DatasetContext {
  // "train" or "validation": which slot of the config this dataset fills
  // ("inference" when `inference` is set).
  std::string split;
  uint64_t seed = 0;
  // Set by inference; the dataset then reads only what it names. Only a
  // dataset whose traits say reads_inference_input is created so; any other
  // returns UnimplementedError.
  std::optional<InferenceInput> inference;
};

// What a dataset declares about itself (PIPELINE_PLUGIN_TRAITS).
struct DatasetTraits {
  // It reads DatasetContext::inference: predict can run a model trained on
  // it on files a user names.
  bool reads_inference_input = false;
};

template <>
struct PluginKind<Dataset> {
  static constexpr const char* kName = "dataset";
  using Context = DatasetContext;
  using Traits = DatasetTraits;
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_DATASET_H_
