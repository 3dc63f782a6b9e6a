// What indexing a shard set costs: the time to open and index every shard
// (from the .idx files, or by scanning the tars with --use_index=false)
// and the memory the index keeps per sample. --cold first evicts the
// shards and their indexes from the page cache (posix_fadvise, these files
// only), as on a first read after a reboot or from a fresh network mount.
//
//   bazel run //plugins/datasets/webdataset:index_bench --
//     --shards='data/fashion_mnist_wds/train-{000000..000001}.tar' --use_index=false --cold

#include <fcntl.h>
#include <gflags/gflags.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "pipeline/data/shard_index.h"
#include "plugins/datasets/webdataset/shard_list.h"
#include "plugins/datasets/webdataset/shard_set.h"

DEFINE_string(shards, "", "a brace pattern of shard files, as the dataset's `shards` option");
DEFINE_bool(use_index, true, "read <shard>.idx where current (false: scan every tar)");
DEFINE_bool(cold, false, "evict the shards and their indexes from the page cache first");
DEFINE_int32(repeats, 3, "index this many times; the fastest is reported");

namespace pipeline {
namespace webdataset_internal {
namespace {

void Evict(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

int Run() {
  WebDatasetOptions options;
  options.add_shards(FLAGS_shards);
  absl::StatusOr<std::vector<std::string>> paths = ListShards(options);
  if (!paths.ok()) {
    std::fprintf(stderr, "index_bench: %s\n", std::string(paths.status().message()).c_str());
    return 2;
  }
  ShardSetOptions set_options;
  set_options.use_index = FLAGS_use_index;
  double fastest = 1e30;
  for (int repeat = 0; repeat < FLAGS_repeats; ++repeat) {
    if (FLAGS_cold) {
      for (const std::string& path : *paths) {
        Evict(path);
        Evict(ShardIndexPath(path));
      }
    }
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<ShardSet> set = OpenShards(*paths, set_options);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!set.ok()) {
      std::fprintf(stderr, "index_bench: %s\n", std::string(set.status().message()).c_str());
      return 1;
    }
    fastest = std::min(fastest, seconds);
    if (repeat + 1 < FLAGS_repeats) continue;
    const double samples = static_cast<double>(set->samples.size());
    std::printf(
        "%zu shards (%lld from .idx), %.0f samples: indexed in %.3f s (%.2f us per "
        "sample, fastest of %d%s); index memory %lld bytes = %.1f bytes per sample\n",
        paths->size(), static_cast<long long>(set->shards_indexed_from_file), samples, fastest,
        1e6 * fastest / samples, FLAGS_repeats, FLAGS_cold ? ", cold" : "",
        static_cast<long long>(set->MemoryBytes()), set->MemoryBytes() / samples);
  }
  return 0;
}

}  // namespace
}  // namespace webdataset_internal
}  // namespace pipeline

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  return pipeline::webdataset_internal::Run();
}
