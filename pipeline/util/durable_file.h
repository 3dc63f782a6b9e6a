#ifndef PIPELINE_UTIL_DURABLE_FILE_H_
#define PIPELINE_UTIL_DURABLE_FILE_H_

// Files that are on disk whole or not at all: written to a temporary name,
// flushed, then renamed over the final name (and the folder flushed), with
// errors that name the file and say whether freeing space would cure them.
// Checkpoints, their checksum files, the resolved config and exported
// weights are written this way.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pipeline {

// `path` could not be written (`error_number` is its errno): kResourceExhausted
// for a full disk or quota, which freeing space cures, kInternal otherwise.
// Both end `train` with exit status 1.
absl::Status WriteError(const std::string& path, int error_number);

// A new file written through its descriptor, whose first failed write is
// kept (with its errno) for Finish. Write always reports every byte taken:
// LibTorch's archive writer, handed a short count (a full disk), throws
// again from its destructor, which ends the process; told nothing, it
// finishes, and the error comes out of Finish instead.
class SyncedFile {
 public:
  // Errors name `name` (the file the caller is making), not the temporary.
  SyncedFile(const std::string& path, std::string name);
  ~SyncedFile();
  SyncedFile(const SyncedFile&) = delete;
  SyncedFile& operator=(const SyncedFile&) = delete;

  size_t Write(const void* data, size_t size);

  // On disk and closed, or the first error on the way (a network file
  // system may only report it at fsync or close).
  absl::Status Finish();

 private:
  const std::string name_;
  int fd_;
  int error_ = 0;
};

// Renames `from` over `to`, then flushes their folder, so the new name is on
// disk before anything (keep_last) removes an older file. `from` is removed
// when the rename fails.
absl::Status RenameOver(const std::string& from, const std::string& to);

// The bytes of `path`: kNotFound when it cannot be opened, kDataLoss on a
// read error.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

// Writes `text` to `path` all or nothing (`path`.tmp, flushed, renamed over
// `path`); on failure `path` is as it was and the temporary is removed:
// kResourceExhausted for a full disk or quota ("cannot write <path>: No
// space left on device"), kInternal otherwise.
absl::Status WriteFileAtomically(const std::string& path, const std::string& text);

// Whether a file can be made in folder `dir`, or, where it does not exist
// yet, in the nearest folder above it that does (where it would be made):
// kFailedPrecondition naming `dir` (as output_dir) and the reason
// ("Read-only file system", "Not a directory") otherwise. Tried with a file
// that is removed again, so it holds as root too, where permission bits
// stop nothing.
absl::Status CheckDirectoryWritable(const std::string& dir);

}  // namespace pipeline

#endif  // PIPELINE_UTIL_DURABLE_FILE_H_
