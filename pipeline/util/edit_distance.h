#ifndef PIPELINE_UTIL_EDIT_DISTANCE_H_
#define PIPELINE_UTIL_EDIT_DISTANCE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace pipeline {

// Levenshtein distance between two strings.
int EditDistance(absl::string_view a, absl::string_view b);

// The candidate closest to `name`, or "" when none is close enough to be a
// plausible typo (distance more than half the name's length).
std::string ClosestMatch(absl::string_view name, const std::vector<std::string>& candidates);

// `Did you mean "x"?` for the closest candidate, or "" when there is none.
std::string DidYouMean(absl::string_view name, const std::vector<std::string>& candidates);

}  // namespace pipeline

#endif  // PIPELINE_UTIL_EDIT_DISTANCE_H_
