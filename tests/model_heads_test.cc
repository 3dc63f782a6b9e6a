// Every model plugin names its classifier head (Model::head_prefixes)
// correctly: each prefix exactly one weight and bias, a layer whose outputs
// are the classes (the main classifier, and any auxiliary classifier's last
// layer). Pretrained weights for another class count and freeze_backbone
// both rely on it.

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/registry/registry.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

class ModelHeadsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelHeadsTest, HeadPrefixesNameTheClassifierLayer) {
  constexpr int64_t kClasses = 7;
  auto model = testing::CreatePlugin<Model>(GetParam(), ModelContext{kClasses, 3});
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<std::string> prefixes = (*model)->head_prefixes();
  ASSERT_FALSE(prefixes.empty());
  const auto parameters = (*model)->named_parameters();
  for (const std::string& prefix : prefixes) {
    std::set<std::string> head;
    for (const auto& item : parameters) {
      if (item.key().rfind(prefix, 0) == 0) head.insert(item.key());
    }
    for (const auto& item : (*model)->named_buffers()) {
      EXPECT_NE(item.key().rfind(prefix, 0), 0u) << item.key() << " is a buffer in the head";
    }
    EXPECT_EQ(head, (std::set<std::string>{prefix + "bias", prefix + "weight"}));
    if (head.size() != 2) continue;
    EXPECT_EQ(parameters[prefix + "weight"].size(0), kClasses) << prefix;
    EXPECT_EQ(parameters[prefix + "bias"].size(0), kClasses) << prefix;
  }
}

// Every registered model, as the registry lists them: a new model plugin is
// checked without being named here.
std::vector<std::string> RegisteredModels() {
  std::vector<std::string> models;
  for (const PluginInfo& info : RegistryIndex::Global().ListAll()) {
    if (info.kind == "model") models.push_back(absl::StrCat("name: \"", info.name, "\""));
  }
  return models;
}

INSTANTIATE_TEST_SUITE_P(AllModels, ModelHeadsTest, ::testing::ValuesIn(RegisteredModels()));

// Variants whose head is built differently from the default's.
INSTANTIATE_TEST_SUITE_P(
    Variants, ModelHeadsTest,
    ::testing::Values("name: \"mobilenet_v3\" options { "
                      "[type.googleapis.com/pipeline.MobileNetV3Options] { variant: SMALL } }"));

TEST(RegisteredModelsTest, AreListedFromTheRegistry) {
  EXPECT_GE(RegisteredModels().size(), 8u);
}

}  // namespace
}  // namespace pipeline
