#ifndef PLUGINS_DATASETS_WEBDATASET_SHARD_LIST_H_
#define PLUGINS_DATASETS_WEBDATASET_SHARD_LIST_H_

// Which shard files the options name: the brace patterns of `shards`
// expanded, or the lines of the `shard_list` file. Internal to the
// webdataset plugin.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plugins/datasets/webdataset/webdataset.pb.h"

namespace pipeline {
namespace webdataset_internal {

// `path` as the user meant it: a relative one from the folder `bazel run`
// was called from (BUILD_WORKING_DIRECTORY), else as it is.
std::string FromWorkingDirectory(const std::string& path);

// What can be checked without reading files: one of shards and shard_list
// set, every pattern non-empty and well-formed. Errors start with the
// field ("shards[1]: ...").
absl::Status CheckShardOptions(const WebDatasetOptions& options);

// The shard paths, in order. Errors: a malformed pattern, a list file that
// cannot be read or names no shard, a shard named twice.
absl::StatusOr<std::vector<std::string>> ListShards(const WebDatasetOptions& options);

}  // namespace webdataset_internal
}  // namespace pipeline

#endif  // PLUGINS_DATASETS_WEBDATASET_SHARD_LIST_H_
