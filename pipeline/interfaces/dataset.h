#ifndef PIPELINE_INTERFACES_DATASET_H_
#define PIPELINE_INTERFACES_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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
};

struct DatasetContext {
  // "train" or "validation": which slot of the config this dataset fills.
  std::string split;
  uint64_t seed = 0;
};

template <>
struct PluginKind<Dataset> {
  static constexpr const char* kName = "dataset";
  using Context = DatasetContext;
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_DATASET_H_
