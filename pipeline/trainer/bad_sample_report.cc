#include "pipeline/trainer/bad_sample_report.h"

#include "absl/strings/str_cat.h"

namespace pipeline {
namespace {

// Training replaces a bad sample, validation leaves it out (loader.h).
std::string WhatHappened(const std::string& split) {
  return split == "train_data" ? "each replaced by the next sample in the epoch's order that loads"
                               : "left out of the validation pass";
}

std::string More(int64_t count, size_t listed) {
  return absl::StrCat("  ... and ", count - static_cast<int64_t>(listed), " more");
}

std::string Plural(int64_t n, const char* word) {
  return absl::StrCat(n, " ", word, n == 1 ? "" : "s");
}

}  // namespace

std::vector<std::string> BadSampleReport::EndEpoch(int64_t epoch, int64_t epochs,
                                                   const std::string& split, int64_t job_count,
                                                   const SkippedSamples& own, int world_size) {
  Tally& tally = tallies_[split];
  tally.skipped += job_count;
  tally.epochs += 1;
  tally.world_size = world_size;
  // own.first[i] is own.indices[i] with its error, for the first few i;
  // samples past those are counted but cannot be named.
  for (size_t i = 0; i < own.indices.size(); ++i) {
    if (tally.distinct.insert(own.indices[i]).second && i < own.first.size() &&
        tally.first_errors.size() < SkippedSamples::kMaxListed) {
      tally.first_errors.push_back(own.first[i].error);
    }
  }
  if (job_count == 0) return {};
  std::vector<std::string> lines = {absl::StrCat(
      "epoch ", epoch + 1, "/", epochs, ": ", split, ": skipped ",
      Plural(job_count, "sample"), " that failed to load (on_bad_sample: SKIP), ",
      WhatHappened(split), ":")};
  for (const SkippedSample& sample : own.first) lines.push_back("  " + sample.error);
  if (own.count > static_cast<int64_t>(own.first.size())) {
    lines.push_back(More(own.count, own.first.size()));
  }
  if (world_size > 1) {
    lines.push_back(absl::StrCat("  (the count is all ", world_size,
                                 " processes'; the files listed are this process's share)"));
  }
  return lines;
}

std::vector<std::string> BadSampleReport::Summary() const {
  std::vector<std::string> lines;
  for (const auto& [split, tally] : tallies_) {
    if (tally.skipped == 0) {
      lines.push_back(absl::StrCat("bad samples: ", split, ": none skipped in ",
                                   Plural(tally.epochs, "epoch")));
      continue;
    }
    const std::string distinct =
        Plural(static_cast<int64_t>(tally.distinct.size()), "different sample");
    lines.push_back(absl::StrCat(
        "bad samples: ", split, ": skipped ", tally.skipped, " times in ",
        Plural(tally.epochs, "epoch"),
        tally.world_size > 1
            ? absl::StrCat(" by all ", tally.world_size, " processes; ", distinct,
                           " in this process's share")
            : absl::StrCat(", ", distinct),
        "; fix or remove these files:"));
    for (const std::string& error : tally.first_errors) lines.push_back("  " + error);
    if (tally.distinct.size() > tally.first_errors.size()) {
      lines.push_back(More(static_cast<int64_t>(tally.distinct.size()), tally.first_errors.size()));
    }
  }
  return lines;
}

int64_t BadSampleReport::total() const {
  int64_t total = 0;
  for (const auto& [split, tally] : tallies_) total += tally.skipped;
  return total;
}

}  // namespace pipeline
