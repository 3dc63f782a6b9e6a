#ifndef PLUGINS_DATASETS_WEBDATASET_SAMPLE_LABEL_H_
#define PLUGINS_DATASETS_WEBDATASET_SAMPLE_LABEL_H_

// A sample's label from its label member, decoded once, when its shard is
// indexed: a `.cls` member (the class index in decimal, as webdataset's
// writers store `int` values) or a field of a `.json` member. Errors say
// what is wrong with the text; the caller adds the shard and member.
// Internal to the webdataset plugin.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pipeline {
namespace webdataset_internal {

// "7", "7\n", " 7 ": 7. Negative, fractional or over 2^31 - 1: an error.
absl::StatusOr<int32_t> ParseClsLabel(absl::string_view text);

// The value of `field` in the JSON object `text` ("a.b" descends into the
// object "a"): an integer class index as above, or a string naming one of
// `class_names` (its index).
absl::StatusOr<int32_t> ParseJsonLabel(absl::string_view text, const std::string& field,
                                       const std::vector<std::string>& class_names);

}  // namespace webdataset_internal
}  // namespace pipeline

#endif  // PLUGINS_DATASETS_WEBDATASET_SAMPLE_LABEL_H_
