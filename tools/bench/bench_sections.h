#ifndef TOOLS_BENCH_BENCH_SECTIONS_H_
#define TOOLS_BENCH_BENCH_SECTIONS_H_

// The bench's sections (--sections), one runner each in its own
// <section>_section.cc, and the table that names and orders them.

#include <set>
#include <string>
#include <vector>

#include "tools/bench/bench_context.h"
#include "tools/bench/bench_options.h"

namespace pipeline {
namespace bench {

// Rows of the performance table.
void RunComputeSection(BenchContext& context);
void RunAllocatorSection(BenchContext& context);
void RunDataSection(BenchContext& context);
void RunLoaderThreadsSection(BenchContext& context);
void RunTransformsSection(BenchContext& context);
void RunKernelsSection(BenchContext& context);
void RunPythonSection(BenchContext& context);
void RunEndToEndSection(BenchContext& context);
void RunDdpSection(BenchContext& context);
void RunTorch2Section(BenchContext& context);
// A table of its own, printed before the performance table's header; it
// reads no corpus.
void RunModelsSection(const BenchOptions& options);

struct BenchSection {
  std::string name;
  // One of these two is set.
  void (*add_rows)(BenchContext&) = nullptr;
  void (*print_own_table)(const BenchOptions&) = nullptr;
  // Other sections that run this one too when chosen without it: their
  // rows are read against its rows, which come first.
  std::vector<std::string> also_run_for = {};
};

// Every section, in the order the performance table's rows come.
const std::vector<BenchSection>& BenchSections();

// Whether `section` runs when `chosen` are asked for.
bool Runs(const BenchSection& section, const std::set<std::string>& chosen);

}  // namespace bench
}  // namespace pipeline

#endif  // TOOLS_BENCH_BENCH_SECTIONS_H_
