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
