#ifndef PLUGINS_DATASETS_WEBDATASET_SHARD_SET_H_
#define PLUGINS_DATASETS_WEBDATASET_SHARD_SET_H_

// The shards of a webdataset, each opened once and indexed: from its
// `<shard>.idx` where that is current, else by scanning its tar headers.
// What stays in memory is 16 bytes per sample (pipeline/data/
// shard_index.h) and one descriptor and path per shard. Internal to the
// webdataset plugin.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pipeline/data/shard_index.h"
#include "plugins/datasets/webdataset/shard_scan.h"

namespace pipeline {
namespace webdataset_internal {

// Open read-only descriptors, closed with it. pread on them is safe from
// any number of threads.
class ShardDescriptors {
 public:
  ShardDescriptors() = default;
  ~ShardDescriptors();
  ShardDescriptors(ShardDescriptors&& other) noexcept;
  ShardDescriptors& operator=(ShardDescriptors&&) = delete;
  ShardDescriptors(const ShardDescriptors&) = delete;

  void Add(int fd) { fds_.push_back(fd); }
  int operator[](size_t shard) const { return fds_[shard]; }

 private:
  std::vector<int> fds_;
};

struct ShardSet {
  std::vector<std::string> paths;  // by shard, as errors name them
  ShardDescriptors descriptors;    // by shard
  // first_sample[s] is shard s's first sample; one more entry, the total.
  std::vector<int64_t> first_sample = {0};
  std::vector<IndexedSample> samples;  // every shard's, in order
  int64_t shards_indexed_from_file = 0;

  // The shard that holds sample `index` (0 <= index < samples.size()).
  size_t ShardOf(int64_t index) const;
  // Bytes held per sample and per shard (what the dataset keeps).
  int64_t MemoryBytes() const;
};

struct ShardSetOptions {
  LabelRules label_rules;
  // Read `<shard>.idx` where it is not older than the shard and names its
  // size; scan the shard otherwise.
  bool use_index = true;
};

// Opens and indexes every shard in `paths`, in order. Errors name the
// shard: one that does not exist or cannot be read, more shards than the
// process may open files, a malformed index, and every error of ScanShard.
absl::StatusOr<ShardSet> OpenShards(const std::vector<std::string>& paths,
                                    const ShardSetOptions& options);

// The name in the tar header of the image member of sample `index` (an
// extra read, for messages).
absl::StatusOr<std::string> ImageMemberName(const ShardSet& set, int64_t index);

}  // namespace webdataset_internal
}  // namespace pipeline

#endif  // PLUGINS_DATASETS_WEBDATASET_SHARD_SET_H_
