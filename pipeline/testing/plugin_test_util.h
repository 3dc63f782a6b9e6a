#ifndef PIPELINE_TESTING_PLUGIN_TEST_UTIL_H_
#define PIPELINE_TESTING_PLUGIN_TEST_UTIL_H_

// Plugin tests build their plugin the way the trainer does: from an inline
// textproto PluginConfig, through the registry.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/text_format.h"
#include "pipeline/config/pipeline.pb.h"
#include "pipeline/registry/registry.h"

namespace pipeline {
namespace testing {

inline PluginConfig ParsePluginConfig(const std::string& text) {
  PluginConfig config;
  if (!google::protobuf::TextFormat::ParseFromString(text, &config)) {
    config.set_name("<unparsable test config: " + text + ">");
  }
  return config;
}

template <typename Interface>
absl::StatusOr<std::unique_ptr<Interface>> CreatePlugin(
    const std::string& text, const typename PluginKind<Interface>::Context& context = {}) {
  return Registry<Interface>::Global().Create(ParsePluginConfig(text), context);
}

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_PLUGIN_TEST_UTIL_H_
