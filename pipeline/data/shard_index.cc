#include "pipeline/data/shard_index.h"

#include "absl/strings/str_cat.h"
#include "pipeline/data/tar_reader.h"
#include "pipeline/util/durable_file.h"

namespace pipeline {
namespace {

constexpr absl::string_view kMagic("webdataset-idx1\n");
constexpr size_t kHeaderBytes = 32;
constexpr size_t kRecordBytes = 16;

void PutLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(value >> (8 * i)));
}

uint64_t GetLittleEndian(const char* at, int bytes) {
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = value << 8 | static_cast<unsigned char>(at[i]);
  return value;
}

}  // namespace

std::string ShardIndexPath(const std::string& shard_path) { return shard_path + ".idx"; }

std::string SerializeShardIndex(const ShardIndex& index) {
  std::string bytes(kMagic);
  bytes.reserve(kHeaderBytes + kRecordBytes * index.samples.size());
  PutLittleEndian(index.shard_bytes, 8, &bytes);
  PutLittleEndian(index.samples.size(), 8, &bytes);
  for (const IndexedSample& sample : index.samples) {
    PutLittleEndian(sample.image_offset, 8, &bytes);
    PutLittleEndian(sample.image_size, 4, &bytes);
    PutLittleEndian(static_cast<uint32_t>(sample.label), 4, &bytes);
  }
  return bytes;
}

absl::StatusOr<ShardIndex> ParseShardIndex(absl::string_view bytes, const std::string& shown) {
  const std::string hint = "; delete it to have the shard scanned instead";
  if (bytes.size() < kHeaderBytes || bytes.substr(0, kMagic.size()) != kMagic) {
    return absl::DataLossError(
        absl::StrCat(shown, ": not a webdataset index (no \"webdataset-idx1\" header)", hint));
  }
  ShardIndex index;
  index.shard_bytes = GetLittleEndian(bytes.data() + 16, 8);
  const uint64_t count = GetLittleEndian(bytes.data() + 24, 8);
  if (count > (bytes.size() - kHeaderBytes) / kRecordBytes ||
      kHeaderBytes + count * kRecordBytes != bytes.size()) {
    return absl::DataLossError(absl::StrCat(shown, ": says ", count, " samples but holds ",
                                            bytes.size(), " bytes (truncated?)", hint));
  }
  index.samples.resize(count);
  uint64_t next_free = kTarBlockBytes;  // the first image follows a header
  for (uint64_t i = 0; i < count; ++i) {
    const char* record = bytes.data() + kHeaderBytes + i * kRecordBytes;
    IndexedSample& sample = index.samples[i];
    sample.image_offset = GetLittleEndian(record, 8);
    sample.image_size = static_cast<uint32_t>(GetLittleEndian(record + 8, 4));
    sample.label = static_cast<int32_t>(GetLittleEndian(record + 12, 4));
    const uint64_t end =
        sample.image_offset + (sample.image_size == kImageTooLarge ? 0 : sample.image_size);
    if (sample.image_offset % kTarBlockBytes != 0 || sample.image_offset < next_free ||
        end > index.shard_bytes || sample.label < 0) {
      return absl::DataLossError(absl::StrCat(
          shown, ": sample ", i, " (image at byte ", sample.image_offset, ", ", sample.image_size,
          " bytes, label ", sample.label, ") does not fit a tar of ", index.shard_bytes,
          " bytes after the sample before it", hint));
    }
    next_free = TarPaddedSize(end) + kTarBlockBytes;
  }
  return index;
}

absl::Status WriteShardIndex(const std::string& path, const ShardIndex& index) {
  return WriteFileAtomically(path, SerializeShardIndex(index));
}

}  // namespace pipeline
