#include "pipeline/util/edit_distance.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace pipeline {

int EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string ClosestMatch(absl::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  int best_distance = static_cast<int>(name.size()) / 2 + 1;
  for (const std::string& candidate : candidates) {
    const int d = EditDistance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string DidYouMean(absl::string_view name, const std::vector<std::string>& candidates) {
  const std::string closest = ClosestMatch(name, candidates);
  return closest.empty() ? "" : absl::StrCat(" Did you mean \"", closest, "\"?");
}

}  // namespace pipeline
