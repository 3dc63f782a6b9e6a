#ifndef PLUGINS_DATASETS_WEBDATASET_BRACE_EXPAND_H_
#define PLUGINS_DATASETS_WEBDATASET_BRACE_EXPAND_H_

// Shard patterns as the Python `braceexpand` package (which webdataset
// uses) expands them, so a pattern copied from a Python training script
// names the same files:
//
//   "train-{000000..000127}.tar"  128 names, zero-padded to the wider bound
//                                 when either bound has a leading zero
//   "{0..10..5}" "{9..7}"         steps; descending ranges
//   "{a..e}" "{Z..b}"             letter ranges (A..Z then a..z)
//   "{train,val}-{0..1}.tar"      alternatives; several braces multiply
//   "{x,{a..c}}"                  nesting
//   "{x}" "{}"                    no comma, no range: kept as written
//   "\{"                          a brace taken literally
//
// Internal to the webdataset plugin.

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pipeline {
namespace webdataset_internal {

// Every name `pattern` stands for, in braceexpand's order; an error that
// says what is malformed and where (a brace never closed, a '}' closing
// nothing, a range bound too large) or that the pattern stands for more
// than `max_names` names.
absl::StatusOr<std::vector<std::string>> ExpandBraces(absl::string_view pattern,
                                                      size_t max_names = 1000000);

}  // namespace webdataset_internal
}  // namespace pipeline

#endif  // PLUGINS_DATASETS_WEBDATASET_BRACE_EXPAND_H_
