// Every plugin listed in plugins/all_plugins.bzl is linked into the tools and
// registered under its folder's name. Catches a library the linker dropped
// (a plugin target without alwayslink) and a plugin registered under a name
// nobody could find from the folder tree.

#include <set>
#include <string>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "pipeline/registry/registry.h"

namespace pipeline {
namespace {

TEST(AllPluginsRegisteredTest, EveryListedPluginIsRegisteredUnderItsFolderName) {
  const char* labels = std::getenv("ALL_PLUGINS");
  ASSERT_NE(labels, nullptr) << "the BUILD rule passes the list in ALL_PLUGINS";
  std::set<std::string> registered;
  for (const PluginInfo& info : RegistryIndex::Global().ListAll()) registered.insert(info.name);
  int checked = 0;
  for (absl::string_view label : absl::StrSplit(labels, ' ', absl::SkipEmpty())) {
    const std::string name(label.substr(label.rfind('/') + 1));
    EXPECT_TRUE(registered.count(name)) << label << " registers no plugin named \"" << name << "\"";
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

TEST(AllPluginsRegisteredTest, EveryKindHasPlugins) {
  std::set<std::string> kinds;
  for (const PluginInfo& info : RegistryIndex::Global().ListAll()) kinds.insert(info.kind);
  EXPECT_EQ(kinds, (std::set<std::string>{"batch_transform", "dataset", "loss", "metric", "model", "optimizer",
                                          "sampler", "schedule", "strategy", "transform"}));
}

}  // namespace
}  // namespace pipeline
