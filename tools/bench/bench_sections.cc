#include "tools/bench/bench_sections.h"

namespace pipeline {
namespace bench {

const std::vector<BenchSection>& BenchSections() {
  static const auto* const sections = new std::vector<BenchSection>{
      // end_to_end's rows follow the compute ceiling's row.
      {"compute", RunComputeSection, nullptr, {"end_to_end"}},
      {"allocator", RunAllocatorSection},
      {"data", RunDataSection},
      // Its rows are read against data's one-thread JPEG row.
      {"loader_threads", RunLoaderThreadsSection},
      {"transforms", RunTransformsSection},
      {"kernels", RunKernelsSection},
      {"python", RunPythonSection},
      {"end_to_end", RunEndToEndSection},
      {"ddp", RunDdpSection},
      {"models", nullptr, RunModelsSection},
      {"torch2", RunTorch2Section},
  };
  return *sections;
}

bool Runs(const BenchSection& section, const std::set<std::string>& chosen) {
  if (chosen.count(section.name)) return true;
  for (const std::string& other : section.also_run_for) {
    if (chosen.count(other)) return true;
  }
  return false;
}

}  // namespace bench
}  // namespace pipeline
