#ifndef PIPELINE_TESTING_CONFORMANCE_CONFIG_H_
#define PIPELINE_TESTING_CONFORMANCE_CONFIG_H_

// The PluginConfig a conformance suite builds its plugin from: the plugin's
// registered name and the body of its options message in text format. The
// options type comes from the registry, so a BUILD line need not name it.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/text_format.h"
#include "pipeline/config/pipeline.pb.h"
#include "pipeline/registry/registry.h"

namespace pipeline {
namespace testing {

template <typename Interface>
absl::StatusOr<PluginConfig> ConformanceConfig(const std::string& plugin,
                                               const std::string& options_text) {
  const Registry<Interface>& registry = Registry<Interface>::Global();
  const google::protobuf::Message* defaults = registry.DefaultOptions(plugin);
  if (defaults == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "\"", plugin, "\" is not a registered ", PluginKind<Interface>::kName,
        " (is the plugin linked, and is plugin_name its registered name?); registered: ",
        absl::StrJoin(registry.Names(), ", ")));
  }
  std::unique_ptr<google::protobuf::Message> options(defaults->New());
  if (!google::protobuf::TextFormat::ParseFromString(options_text, options.get())) {
    return absl::InvalidArgumentError(absl::StrCat("options of ", plugin, " do not parse as ",
                                                   options->GetDescriptor()->full_name(), ": ",
                                                   options_text));
  }
  PluginConfig config;
  config.set_name(plugin);
  config.mutable_options()->PackFrom(*options);
  return config;
}

// gtest parameter names must be alphanumeric.
inline std::string ConformanceInstanceName(size_t index) {
  return absl::StrCat("options", index);
}

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_CONFORMANCE_CONFIG_H_
