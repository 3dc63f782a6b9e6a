#ifndef PIPELINE_DATA_TAR_WRITER_H_
#define PIPELINE_DATA_TAR_WRITER_H_

// Writing a POSIX ustar file front to back, as the webdataset shards of
// prepare_data are written. Every header says mode 0644, owner 0:0 and the
// same fixed time, so the same members in the same order give the same
// bytes on any machine (a shard's digest then identifies its content).

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pipeline/util/durable_file.h"

namespace pipeline {

// 2000-01-01T00:00:00Z, the fixed time of rules_pkg's reproducible tars:
// extracting tools warn about the epoch itself as an implausible time.
inline constexpr uint64_t kTarFixedMtime = 946684800;

// The 512-byte ustar header of a regular file `name` with `size` bytes. A
// name over 100 bytes is split at a '/' into the prefix field (up to 155
// bytes); one that cannot be split so is an error, as is a size of 8 GiB or
// more (the octal size field's limit).
absl::StatusOr<std::string> UstarHeader(absl::string_view name, uint64_t size);

class TarWriter {
 public:
  // Creates `path` (replacing it); errors name the file as `shown`.
  TarWriter(const std::string& path, std::string shown);

  // Appends a regular file `name` holding `data`; returns the offset of its
  // first data byte in the tar.
  absl::StatusOr<uint64_t> Add(absl::string_view name, absl::string_view data);

  // Bytes written so far, without the end-of-archive block.
  uint64_t bytes() const { return bytes_; }

  // Writes the end-of-archive block (two zero blocks), flushes and closes
  // the file, or says why it could not.
  absl::Status Finish();

 private:
  SyncedFile file_;
  uint64_t bytes_ = 0;
};

}  // namespace pipeline

#endif  // PIPELINE_DATA_TAR_WRITER_H_
