// compute: the model's forward+backward+step on in-memory tensors, the
// ceiling end-to-end training can reach, then the same in channels-last
// and bf16 autocast.

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/bench/bench_sections.h"
#include "tools/bench/compute_ceiling.h"

namespace pipeline {
namespace bench {
namespace {

void AddCeilingRow(BenchContext& context) {
  const ComputeResult compute =
      ComputeCeiling(context.jpeg, context.options.batch_size, context.options.min_seconds);
  context.compute_ceiling = compute.images_per_sec;
  context.table.Add(
      {absl::StrFormat("compute ceiling: forward+backward+%s step, in-memory batch, %d threads",
                       context.jpeg.optimizer().name(), compute.threads),
       absl::StrFormat("%.1f", compute.images_per_sec), "1.00", "compute ceiling"});
}

void AddFormatRows(BenchContext& context) {
  for (const auto& [channels_last, with_bf16] :
       {std::pair{true, false}, std::pair{false, true}, std::pair{true, true}}) {
    const std::string label = absl::StrCat(
        "compute, ", channels_last ? "memory_format: CHANNELS_LAST" : "",
        channels_last && with_bf16 ? " + " : "", with_bf16 ? "precision: BF16_AUTOCAST" : "");
    if (with_bf16 && !context.bf16.native) {
      // Emulated bf16 would take the bench hours (over 100x float32).
      context.table.Add({label, "skipped: this CPU has no native bf16", "", ""});
      continue;
    }
    const double rate = ComputeCeiling(context.jpeg, context.options.batch_size,
                                       context.options.min_seconds, channels_last, with_bf16)
                            .images_per_sec;
    context.table.Add({label, absl::StrFormat("%.1f", rate),
                       Ratio(rate, context.compute_ceiling), "compute ceiling"});
  }
}

}  // namespace

void RunComputeSection(BenchContext& context) {
  AddCeilingRow(context);
  // Run for end_to_end alone, the section is its ceiling row.
  if (context.Chose("compute")) AddFormatRows(context);
}

}  // namespace bench
}  // namespace pipeline
