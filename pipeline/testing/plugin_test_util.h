#ifndef PIPELINE_TESTING_PLUGIN_TEST_UTIL_H_
#define PIPELINE_TESTING_PLUGIN_TEST_UTIL_H_

// Plugin tests build their plugin the way the trainer does: from an inline
// textproto PluginConfig, through the registry; and check its validator's
// messages the same way.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
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

// The config text of plugin `name` with `options` (text format) in its
// options message `options_type` (pipeline.<options_type>).
inline std::string PluginText(const std::string& name, const std::string& options_type,
                              const std::string& options) {
  return "name: \"" + name + "\" options { [type.googleapis.com/pipeline." + options_type +
         "] { " + options + " } }";
}

// What the registry's validator says of the config `text`; "" when it
// passes.
template <typename Interface>
std::string ValidationMessage(const std::string& text) {
  return std::string(Registry<Interface>::Global().Validate(ParsePluginConfig(text)).message());
}

// The plugin, or nullptr and a test failure that says why it was not made.
template <typename Interface>
std::unique_ptr<Interface> MakePluginOrFail(
    const std::string& text, const typename PluginKind<Interface>::Context& context = {}) {
  absl::StatusOr<std::unique_ptr<Interface>> plugin = CreatePlugin<Interface>(text, context);
  EXPECT_TRUE(plugin.ok()) << plugin.status();
  return plugin.ok() ? *std::move(plugin) : nullptr;
}

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_PLUGIN_TEST_UTIL_H_
