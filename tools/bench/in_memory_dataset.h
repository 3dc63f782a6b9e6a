#ifndef TOOLS_BENCH_IN_MEMORY_DATASET_H_
#define TOOLS_BENCH_IN_MEMORY_DATASET_H_

// A dataset's first samples decoded once and kept in memory, so that a
// measurement sees only what comes after decoding. Get hands out a copy, as
// a decoding dataset hands out a fresh image. It has no GetRegion of its
// own, so the loader runs the transforms on the whole decoded image.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pipeline/interfaces/dataset.h"

namespace pipeline {
namespace bench {

class DecodedInMemory : public Dataset {
 public:
  // The first `samples` samples of `dataset` (all, if it has fewer).
  static absl::StatusOr<std::unique_ptr<DecodedInMemory>> Decode(const Dataset& dataset,
                                                                 int64_t samples);

  int64_t size() const override { return static_cast<int64_t>(samples_.size()); }
  absl::StatusOr<Sample> Get(int64_t index) const override {
    return samples_[static_cast<size_t>(index)];
  }
  const std::vector<std::string>& class_names() const override { return class_names_; }
  const std::vector<Sample>& samples() const { return samples_; }

 private:
  DecodedInMemory(std::vector<Sample> samples, std::vector<std::string> class_names)
      : samples_(std::move(samples)), class_names_(std::move(class_names)) {}

  std::vector<Sample> samples_;
  std::vector<std::string> class_names_;
};

}  // namespace bench
}  // namespace pipeline

#endif  // TOOLS_BENCH_IN_MEMORY_DATASET_H_
