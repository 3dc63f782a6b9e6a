#include "pipeline/util/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace pipeline {

absl::Status WriteError(const std::string& path, int error_number) {
  const std::string message =
      absl::StrCat("cannot write ", path, ": ", std::strerror(error_number));
  return error_number == ENOSPC || error_number == EDQUOT ? absl::ResourceExhaustedError(message)
                                                          : absl::InternalError(message);
}

SyncedFile::SyncedFile(const std::string& path, std::string name)
    : name_(std::move(name)),
      fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) {
  if (fd_ < 0) error_ = errno;
}

SyncedFile::~SyncedFile() {
  if (fd_ >= 0) ::close(fd_);
}

size_t SyncedFile::Write(const void* data, size_t size) {
  const char* bytes = static_cast<const char*>(data);
  for (size_t done = 0; error_ == 0 && done < size;) {
    const ssize_t written = ::write(fd_, bytes + done, size - done);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) {
      error_ = written < 0 ? errno : EIO;
      break;
    }
    done += static_cast<size_t>(written);
  }
  return size;
}

absl::Status SyncedFile::Finish() {
  if (error_ == 0 && ::fsync(fd_) != 0) error_ = errno;
  if (fd_ >= 0 && ::close(fd_) != 0 && error_ == 0) error_ = errno;
  fd_ = -1;
  return error_ == 0 ? absl::OkStatus() : WriteError(name_, error_);
}

absl::Status RenameOver(const std::string& from, const std::string& to) {
  std::error_code error;
  std::filesystem::rename(from, to, error);
  if (error) {
    const absl::StatusCode code = WriteError(to, error.value()).code();
    const std::string reason = error.message();
    std::filesystem::remove(from, error);
    return absl::Status(code, absl::StrCat("cannot rename ", from, " to ", to, ": ", reason));
  }
  const std::string dir = std::filesystem::path(to).parent_path().string();
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    // Some file systems cannot flush a folder (EINVAL); the rename stands.
    const bool flushed = ::fsync(fd) == 0 || errno == EINVAL;
    const int error_number = errno;
    ::close(fd);
    if (!flushed) return WriteError(dir, error_number);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) return absl::DataLossError(absl::StrCat(path, ": read error"));
  return bytes;
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  SyncedFile file(temporary, path);
  file.Write(text.data(), text.size());
  if (absl::Status written = file.Finish(); !written.ok()) {
    std::error_code error;
    std::filesystem::remove(temporary, error);
    return written;
  }
  return RenameOver(temporary, path);
}

absl::Status CheckDirectoryWritable(const std::string& dir) {
  std::error_code error;
  std::filesystem::path existing = std::filesystem::absolute(dir, error);
  // A path through a regular file does not exist either (ENOTDIR): the
  // walk stops at that file, and the probe below names the reason.
  while (!std::filesystem::exists(existing, error) && existing.has_relative_path()) {
    existing = existing.parent_path();
  }
  std::string probe = (existing / ".train_write_check_XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    const int error_number = errno;
    const bool missing = existing != std::filesystem::absolute(dir, error);
    return absl::FailedPreconditionError(
        absl::StrCat("output_dir: ", missing ? absl::StrCat("cannot create ", dir, ": ") : "",
                     "cannot write in ", missing ? existing.string() : dir, ": ",
                     std::strerror(error_number)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return absl::OkStatus();
}

}  // namespace pipeline
