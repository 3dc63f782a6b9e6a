#ifndef PIPELINE_DATA_WEBDATASET_WRITER_H_
#define PIPELINE_DATA_WEBDATASET_WRITER_H_

// Writing samples as webdataset shards, the layout the Python `webdataset`
// package and the `webdataset` dataset read:
//
//   <folder>/<prefix>-000000.tar      <key>.png (or .jpg), <key>.cls, ...
//   <folder>/<prefix>-000000.tar.idx  its index (pipeline/data/shard_index.h)
//   <folder>/<prefix>-000001.tar      ...
//
// A shard is closed when the next sample would take it past the size
// limit (a sample larger than the limit gets a shard of its own). Each
// shard is written under a hidden temporary name and renamed into place, so
// an interrupted run leaves no half-written shard under a shard's name.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pipeline/data/shard_index.h"
#include "pipeline/data/tar_writer.h"

namespace pipeline {

struct WebDatasetWriterOptions {
  std::string folder;  // must exist
  std::string prefix = "train";
  uint64_t max_shard_bytes = 0;       // 0: no limit
  int64_t max_samples_per_shard = 0;  // 0: no limit
  bool write_index = true;
};

class WebDatasetWriter {
 public:
  explicit WebDatasetWriter(WebDatasetWriterOptions options);
  ~WebDatasetWriter();  // removes the temporary of a shard never finished
  WebDatasetWriter(const WebDatasetWriter&) = delete;
  WebDatasetWriter& operator=(const WebDatasetWriter&) = delete;

  // Appends the sample `key`: members "<key>.<image_extension>" holding
  // `image_bytes` and "<key>.cls" holding `label` in decimal. A key must be
  // non-empty, without a '.' in its last path component (webdataset's key
  // ends at the first dot of the file name) and without a trailing '/'.
  absl::Status Add(absl::string_view key, absl::string_view image_extension,
                   absl::string_view image_bytes, int32_t label);

  // Closes the last shard; the paths of every shard written, in order.
  absl::StatusOr<std::vector<std::string>> Finish();

 private:
  absl::Status StartShard();
  absl::Status CloseShard();

  const WebDatasetWriterOptions options_;
  std::vector<std::string> shards_;
  std::unique_ptr<TarWriter> tar_;  // the open shard, if any
  std::string temporary_;           // its hidden name while being written
  ShardIndex index_;                // its samples so far
};

// "<prefix>-000042.tar", the name of shard 42.
std::string WebDatasetShardName(const std::string& prefix, int64_t shard);

}  // namespace pipeline

#endif  // PIPELINE_DATA_WEBDATASET_WRITER_H_
