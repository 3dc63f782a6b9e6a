#include "tools/bench/in_memory_dataset.h"

#include <algorithm>
#include <utility>

namespace pipeline {
namespace bench {

absl::StatusOr<std::unique_ptr<DecodedInMemory>> DecodedInMemory::Decode(const Dataset& dataset,
                                                                         int64_t samples) {
  std::vector<Sample> decoded;
  for (int64_t i = 0; i < std::min(samples, dataset.size()); ++i) {
    absl::StatusOr<Sample> sample = dataset.Get(i);
    if (!sample.ok()) return sample.status();
    decoded.push_back(*std::move(sample));
  }
  return std::unique_ptr<DecodedInMemory>(
      new DecodedInMemory(std::move(decoded), dataset.class_names()));
}

}  // namespace bench
}  // namespace pipeline
