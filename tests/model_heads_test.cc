// Every model plugin names its classifier head (Model::head_prefixes)
// correctly: exactly one weight and bias, the layer whose outputs are the
// classes. Pretrained weights for another class count and freeze_backbone
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
  ASSERT_EQ(prefixes.size(), 1u);
  std::set<std::string> head;
  for (const auto& item : (*model)->named_parameters()) {
    if (item.key().rfind(prefixes[0], 0) == 0) head.insert(item.key());
  }
  for (const auto& item : (*model)->named_buffers()) {
    EXPECT_NE(item.key().rfind(prefixes[0], 0), 0u) << item.key() << " is a buffer in the head";
  }
  EXPECT_EQ(head, (std::set<std::string>{prefixes[0] + "bias", prefixes[0] + "weight"}));
  const auto parameters = (*model)->named_parameters();
  EXPECT_EQ(parameters[prefixes[0] + "weight"].size(0), kClasses);
  EXPECT_EQ(parameters[prefixes[0] + "bias"].size(0), kClasses);
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
