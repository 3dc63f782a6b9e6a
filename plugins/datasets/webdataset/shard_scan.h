#ifndef PLUGINS_DATASETS_WEBDATASET_SHARD_SCAN_H_
#define PLUGINS_DATASETS_WEBDATASET_SHARD_SCAN_H_

// Indexing a webdataset shard by reading its tar headers once: members are
// grouped into samples by key, as webdataset's group_by_keys does (the key
// is the member's path up to the first dot of its file name; a sample is a
// run of adjacent members with the same key), and each sample's image
// member is located and its label member read and decoded. Image data is
// skipped, not read. Internal to the webdataset plugin.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "pipeline/data/shard_index.h"

namespace pipeline {
namespace webdataset_internal {

struct LabelRules {
  std::string json_label_field = "label";
  // Where a .json label is a class name: the classes, by label.
  std::vector<std::string> class_names;
};

// The key and the lower-cased extension of a member name
// ("train/n01_10.JPG" -> "train/n01_10", "jpg"); false for a name whose
// file name has no dot or starts with one (such members are skipped).
bool SplitKey(const std::string& name, std::string* key, std::string* extension);

// Appends the samples of the tar `fd` (`file_bytes` long) to `samples`, in
// tar order. Errors name the file as `shown`, and the member or byte
// offset: the tar reader's, a sample without an image (.jpg, .jpeg, .png)
// or two, a sample without a label member (.cls, else .json), a label
// member that does not hold a label.
absl::Status ScanShard(int fd, const std::string& shown, uint64_t file_bytes,
                       const LabelRules& rules, std::vector<IndexedSample>* samples);

}  // namespace webdataset_internal
}  // namespace pipeline

#endif  // PLUGINS_DATASETS_WEBDATASET_SHARD_SCAN_H_
