#ifndef PIPELINE_DATA_SHARD_INDEX_H_
#define PIPELINE_DATA_SHARD_INDEX_H_

// The index of one webdataset shard: where each sample's image lies in the
// tar and its label, so the dataset can read any sample with one pread and
// need not scan the tar's headers. prepare_data writes it beside each shard
// as `<shard>.idx`; the dataset reads it when it is at least as new as the
// shard and names the shard's current size.
//
// The file (all numbers little-endian):
//
//   16 bytes  "webdataset-idx1\n"
//    8 bytes  the shard's size in bytes, when the index was written
//    8 bytes  N, the number of samples
//   N x 16    per sample, in tar order: the offset of the image member's
//             first data byte (8), its size (4), the label (4, signed)
//
// A record is also what the dataset keeps in memory per sample: 16 bytes.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pipeline {

struct IndexedSample {
  uint64_t image_offset = 0;  // first data byte of the image member
  uint32_t image_size = 0;    // bytes, or kImageTooLarge
  int32_t label = 0;          // >= 0
};
static_assert(sizeof(IndexedSample) == 16, "one sample's record is 16 bytes");

// The size of an image member of 4 GiB or more: reading the sample is an
// error (no image is that large), but indexing its shard is not.
inline constexpr uint32_t kImageTooLarge = 0xffffffff;

struct ShardIndex {
  uint64_t shard_bytes = 0;
  std::vector<IndexedSample> samples;
};

// "<shard>.idx".
std::string ShardIndexPath(const std::string& shard_path);

std::string SerializeShardIndex(const ShardIndex& index);

// The index in `bytes`, checked against itself: the header, the length,
// every image inside the shard, block-aligned and in order, labels >= 0.
// Errors name the file as `shown`.
absl::StatusOr<ShardIndex> ParseShardIndex(absl::string_view bytes, const std::string& shown);

// Written whole or not at all.
absl::Status WriteShardIndex(const std::string& path, const ShardIndex& index);

}  // namespace pipeline

#endif  // PIPELINE_DATA_SHARD_INDEX_H_
