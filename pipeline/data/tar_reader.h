#ifndef PIPELINE_DATA_TAR_READER_H_
#define PIPELINE_DATA_TAR_READER_H_

// Walking the members of a POSIX tar file (ustar, GNU long names, pax
// `path` and `size` records) by reading only its headers: each member's
// data is skipped, not read, so listing a shard of large images costs one
// 512-byte read per member. What the webdataset dataset indexes its shards
// with.
//
// Every malformed input is a Status naming the file and the byte offset:
// a header that fails its checksum, a member whose data runs past the end
// of the file, a file that ends without the end-of-archive block.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pipeline {

inline constexpr uint64_t kTarBlockBytes = 512;

// `bytes` rounded up to whole tar blocks.
inline uint64_t TarPaddedSize(uint64_t bytes) {
  return (bytes + kTarBlockBytes - 1) / kTarBlockBytes * kTarBlockBytes;
}

struct TarMember {
  std::string name;            // the full path: ustar prefix, long name or pax path applied
  uint64_t header_offset = 0;  // its own header (after any long-name or pax records)
  uint64_t data_offset = 0;    // its first data byte: header_offset + 512
  uint64_t size = 0;           // data bytes
  char type = '0';             // the ustar typeflag

  // Plain files ('0', old tars' '\0', contiguous '7'); links, folders and
  // devices have no data of their own.
  bool IsRegularFile() const { return type == '0' || type == '\0' || type == '7'; }
};

// Exactly `size` bytes of `fd` from `offset` (pread: safe from many threads
// on one descriptor): kDataLoss naming `shown` when the file ends first,
// kInternal on a read error.
absl::StatusOr<std::string> ReadFileRange(int fd, const std::string& shown, uint64_t offset,
                                          uint64_t size);
// ReadFileRange into `out`, which has room for `size` bytes.
absl::Status ReadFileRangeInto(int fd, const std::string& shown, uint64_t offset, uint64_t size,
                               char* out);

// Whether the 512-byte `block` is a tar header whose checksum is right.
bool TarChecksumMatches(const char* block);

// The name (ustar prefix applied) and size a single header `block` holds,
// without the long-name records that may precede it: what a reader that
// jumps to a member's header can check it against.
struct TarHeaderFields {
  std::string name;
  uint64_t size = 0;
};
absl::StatusOr<TarHeaderFields> ParseTarHeader(const char* block);

class TarReader {
 public:
  // Reads `fd` (open for reading, `file_bytes` long) from its start; errors
  // name the file as `shown`.
  TarReader(int fd, std::string shown, uint64_t file_bytes);

  // The next member, or nullopt at the end-of-archive block.
  absl::StatusOr<std::optional<TarMember>> Next();

 private:
  absl::Status ReadBlock(uint64_t offset, char* block) const;
  absl::Status CheckDataFits(const std::string& what, uint64_t header_offset, uint64_t size) const;
  absl::StatusOr<std::string> ReadRecord(uint64_t header_offset, uint64_t size) const;

  const int fd_;
  const std::string shown_;
  const uint64_t file_bytes_;
  uint64_t offset_ = 0;
  std::string last_name_;  // for errors: where in the file a bad header lies
};

}  // namespace pipeline

#endif  // PIPELINE_DATA_TAR_READER_H_
