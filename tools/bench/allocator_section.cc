// allocator: the compute ceiling under glibc malloc, glibc with mallopt
// settings, tcmalloc and jemalloc, each in a child process
// (bench_any_allocator, which links no allocator of its own) with the
// allocator preloaded.

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/bench/bench_sections.h"

namespace pipeline {
namespace bench {
namespace {

namespace fs = std::filesystem;

struct Allocator {
  std::string name;
  std::vector<std::string> env;  // the child's, LD_PRELOAD first where there is one
};

std::vector<Allocator> Allocators() {
  return {
      {"glibc malloc (default settings)", {}},
      {"glibc malloc, mallopt: no mmap, no trim (MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=-1)",
       {"MALLOC_MMAP_MAX_=0", "MALLOC_TRIM_THRESHOLD_=18446744073709551615"}},
      {"tcmalloc (libtcmalloc_minimal.so.4, linked into train)",
       {absl::StrCat("LD_PRELOAD=", kTcmallocLibrary)}},
      {"jemalloc (libjemalloc.so.2)", {"LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"}},
      // ATen picks AVX2 kernels on this CPU unless told otherwise.
      {"tcmalloc + ATEN_CPU_CAPABILITY=avx512",
       {absl::StrCat("LD_PRELOAD=", kTcmallocLibrary),
        "ATEN_CPU_CAPABILITY=avx512"}},
  };
}

// The library `allocator` preloads; "" for glibc's malloc.
std::string Preloaded(const Allocator& allocator) {
  return allocator.env.empty() || allocator.env[0].rfind("LD_PRELOAD=", 0) != 0
             ? ""
             : allocator.env[0].substr(11);
}

// bench_any_allocator --compute_child under `allocator`.
ProcessResult RunCeilingChild(const BenchContext& context, const Allocator& allocator) {
  const BenchOptions& options = context.options;
  return RunChild(context,
                  {fs::absolute("tools/bench_any_allocator").string(), "--compute_child",
                   "--jpeg_config=" + options.jpeg_config, "--corpus=" + context.corpus,
                   "--batch_size=" + std::to_string(options.batch_size),
                   absl::StrCat("--min_seconds=", options.min_seconds),
                   "--work_dir=" + options.work_dir},
                  allocator.env);
}

}  // namespace

void RunAllocatorSection(BenchContext& context) {
  double glibc = 0;
  for (const Allocator& allocator : Allocators()) {
    const std::string label = "compute ceiling, " + allocator.name;
    const std::string preload = Preloaded(allocator);
    if (!preload.empty() && !fs::exists(preload)) {
      context.table.Add({label, "not installed", "-", "-"});
      continue;
    }
    const ProcessResult child = RunCeilingChild(context, allocator);
    double rate = 0;
    if (child.exit_code != 0 || !absl::SimpleAtod(LastLine(child.output), &rate)) {
      std::cerr << "bench: allocator child failed:\n" << Tail(child.output) << "\n";
      context.table.Add({label, "failed", "-", "-"});
      continue;
    }
    if (glibc == 0) glibc = rate;
    context.table.Add({absl::StrFormat("%s (peak RSS %.0f MB)", label, child.peak_rss_mb),
                       absl::StrFormat("%.1f", rate), Ratio(rate, glibc), "glibc malloc"});
  }
}

}  // namespace bench
}  // namespace pipeline
