// loader_threads: the JPEG ImageFolder pipeline at 224 with 1, 2, 4, ...
// loader threads up to every core of the machine, images/s and how close
// each comes to N times one thread. On a GPU machine the loader has every
// core (data.num_workers' default there), so this is its ceiling.

#include <algorithm>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "tools/bench/bench_configs.h"
#include "tools/bench/bench_sections.h"
#include "tools/bench/loader_rate.h"

namespace pipeline {
namespace bench {
namespace {

// 1, 2, 4, ... below `cores`, then `cores`.
std::vector<int> ThreadCounts(int cores) {
  std::vector<int> counts;
  for (int n = 1; n < cores; n *= 2) counts.push_back(n);
  counts.push_back(cores);
  return counts;
}

}  // namespace

void RunLoaderThreadsSection(BenchContext& context) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::unique_ptr<Dataset> dataset = TrainDataset(context.jpeg);
  double one_thread = 0;
  for (int threads : ThreadCounts(cores)) {
    const DataResult result =
        LoaderRate(context.jpeg, *dataset, context.options.min_seconds, false, threads);
    if (threads == 1) one_thread = result.images_per_sec;
    context.table.Add(
        {absl::StrFormat("data pipeline, %d of %d cores: JPEG 500x375 -> %s (%s)", threads,
                         cores, TransformNames(context.jpeg), result.sample_shape),
         absl::StrFormat("%.1f", result.images_per_sec),
         Ratio(result.images_per_sec, threads * one_thread),
         absl::StrFormat("%d x 1 thread", threads)});
  }
}

}  // namespace bench
}  // namespace pipeline
