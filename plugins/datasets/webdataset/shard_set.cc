#include "plugins/datasets/webdataset/shard_set.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pipeline/data/tar_reader.h"
#include "pipeline/util/durable_file.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace webdataset_internal {
namespace {

// Descriptors the rest of the process (checkpoints, logs, the other
// split's dataset, LibTorch) may still want.
constexpr rlim_t kSpareDescriptors = 256;

std::string ErrnoMessage(int error_number) {
  return std::error_code(error_number, std::generic_category()).message();
}

// Every shard stays open; a set of thousands of shards needs the soft
// limit raised toward the hard one, as a shell's `ulimit -n` would.
absl::Status ReserveDescriptors(size_t shards) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return absl::OkStatus();
  const rlim_t wanted = static_cast<rlim_t>(shards) + kSpareDescriptors;
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= wanted) return absl::OkStatus();
  if (limit.rlim_max == RLIM_INFINITY || limit.rlim_max >= wanted) {
    limit.rlim_cur = wanted;
    if (::setrlimit(RLIMIT_NOFILE, &limit) == 0) return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      shards, " shards stay open as ", shards, " files, but this process may open only ",
      limit.rlim_max, " (ulimit -Hn); raise the limit or write fewer, larger shards"));
}

bool NotOlder(const struct stat& index, const struct stat& shard) {
  return index.st_mtim.tv_sec > shard.st_mtim.tv_sec ||
         (index.st_mtim.tv_sec == shard.st_mtim.tv_sec &&
          index.st_mtim.tv_nsec >= shard.st_mtim.tv_nsec);
}

// The shard's samples from its index file, or false when it has no
// current one (none, older than the shard, or for another size of it).
absl::StatusOr<bool> ReadIndexFile(const std::string& shard, const struct stat& shard_stat,
                                   std::vector<IndexedSample>* samples) {
  const std::string path = ShardIndexPath(shard);
  struct stat index_stat {};
  if (::stat(path.c_str(), &index_stat) != 0 || !NotOlder(index_stat, shard_stat)) return false;
  absl::StatusOr<std::string> bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  ASSIGN_OR_RETURN(ShardIndex index, ParseShardIndex(*bytes, path));
  if (index.shard_bytes != static_cast<uint64_t>(shard_stat.st_size)) return false;
  samples->insert(samples->end(), index.samples.begin(), index.samples.end());
  return true;
}

}  // namespace

ShardDescriptors::~ShardDescriptors() {
  for (int fd : fds_) ::close(fd);
}

ShardDescriptors::ShardDescriptors(ShardDescriptors&& other) noexcept
    : fds_(std::move(other.fds_)) {
  other.fds_.clear();
}

size_t ShardSet::ShardOf(int64_t index) const {
  return static_cast<size_t>(std::upper_bound(first_sample.begin(), first_sample.end(), index) -
                             first_sample.begin() - 1);
}

int64_t ShardSet::MemoryBytes() const {
  int64_t bytes = static_cast<int64_t>(
      samples.capacity() * sizeof(IndexedSample) + first_sample.capacity() * sizeof(int64_t) +
      paths.capacity() * sizeof(std::string) + paths.size() * sizeof(int));
  for (const std::string& path : paths) bytes += static_cast<int64_t>(path.capacity());
  return bytes;
}

absl::StatusOr<ShardSet> OpenShards(const std::vector<std::string>& paths,
                                    const ShardSetOptions& options) {
  RETURN_IF_ERROR(ReserveDescriptors(paths.size()));
  ShardSet set;
  set.paths = paths;
  set.first_sample.reserve(paths.size() + 1);
  for (const std::string& path : paths) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int error_number = errno;
      return absl::Status(
          error_number == ENOENT ? absl::StatusCode::kNotFound
                                 : absl::StatusCode::kPermissionDenied,
          absl::StrCat("shard ", path, ": cannot open: ", ErrnoMessage(error_number)));
    }
    set.descriptors.Add(fd);
    struct stat shard_stat {};
    if (::fstat(fd, &shard_stat) != 0 || !S_ISREG(shard_stat.st_mode)) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", path, ": not a regular file"));
    }
    bool indexed = false;
    if (options.use_index) {
      ASSIGN_OR_RETURN(indexed, ReadIndexFile(path, shard_stat, &set.samples));
    }
    if (indexed) {
      ++set.shards_indexed_from_file;
    } else {
      RETURN_IF_ERROR(ScanShard(fd, path, static_cast<uint64_t>(shard_stat.st_size),
                                options.label_rules, &set.samples));
    }
    set.first_sample.push_back(static_cast<int64_t>(set.samples.size()));
  }
  set.samples.shrink_to_fit();
  return set;
}

absl::StatusOr<std::string> ImageMemberName(const ShardSet& set, int64_t index) {
  const size_t shard = set.ShardOf(index);
  const IndexedSample& sample = set.samples[static_cast<size_t>(index)];
  ASSIGN_OR_RETURN(const std::string header,
                   ReadFileRange(set.descriptors[shard], set.paths[shard],
                                 sample.image_offset - kTarBlockBytes, kTarBlockBytes));
  ASSIGN_OR_RETURN(const TarHeaderFields fields, ParseTarHeader(header.data()));
  return fields.name;
}

}  // namespace webdataset_internal
}  // namespace pipeline
