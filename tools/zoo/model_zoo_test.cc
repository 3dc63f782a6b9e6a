#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/registry/registry.h"
#include "tools/zoo/model_variants.h"
#include "tools/zoo/torchvision_reference.h"
#include "tools/zoo/zoo_table.h"

namespace pipeline {
namespace zoo {
namespace {

TEST(TorchvisionReferenceTest, ReadsThePublishedFigures) {
  absl::StatusOr<TorchvisionReference> reference =
      ReadTorchvisionReference(kTorchvisionReferencePath);
  ASSERT_TRUE(reference.ok()) << reference.status();
  // torchvision's ResNet-18 page: 11,689,512 parameters, 1.81 GFLOPS at 224.
  ASSERT_TRUE(reference->count("resnet18"));
  const TorchvisionFigures& resnet18 = reference->at("resnet18");
  EXPECT_EQ(resnet18.parameters, 11689512);
  EXPECT_NEAR(resnet18.gflops, 1.81, 0.005);
  EXPECT_EQ(resnet18.crop_size, 224);
  EXPECT_EQ(ReadTorchvisionReference("no/such/file").status().code(), absl::StatusCode::kNotFound);
}

TEST(TorchvisionCandidatesTest, SpellTheVariantAsTorchvisionsConstructorsDo) {
  ModelVariant sized{"net", "B0", {}};
  EXPECT_EQ(TorchvisionCandidates(sized), (std::vector<std::string>{"b0", "net_b0", "netb0"}));
  ModelVariant plain{"net", "", {}};
  EXPECT_EQ(TorchvisionCandidates(plain), (std::vector<std::string>{"net"}));
}

TEST(ListModelVariantsTest, ListsEveryRegisteredModelWithOptionsItAccepts) {
  const std::vector<ModelVariant> variants = ListModelVariants();
  std::set<std::string> models;
  for (const ModelVariant& variant : variants) {
    models.insert(variant.model);
    EXPECT_TRUE(Registry<Model>::Global().Validate(variant.config).ok())
        << variant.model << " " << variant.variant;
  }
  const std::vector<std::string> names = Registry<Model>::Global().Names();
  EXPECT_EQ(models, std::set<std::string>(names.begin(), names.end()));
}

// Every variant that torchvision has, built as the tool builds it, has
// torchvision's parameter count.
TEST(ModelZooTest, ParameterCountsMatchTorchvisionsForTheModelsPresent) {
  absl::StatusOr<TorchvisionReference> reference =
      ReadTorchvisionReference(kTorchvisionReferencePath);
  ASSERT_TRUE(reference.ok()) << reference.status();
  int matched = 0;
  for (const ModelVariant& variant : ListModelVariants()) {
    const std::string torchvision = FindTorchvision(variant, *reference);
    if (torchvision.empty()) continue;
    const TorchvisionFigures& figures = reference->at(torchvision);
    if (figures.parameters > kMaxBuiltParameters) continue;
    ++matched;
    absl::StatusOr<std::unique_ptr<Model>> model =
        Registry<Model>::Global().Create(variant.config, ModelContext{kClasses, 3});
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(ParameterCount(**model), figures.parameters)
        << variant.model << " " << variant.variant << " as torchvision's " << torchvision;
  }
  EXPECT_GT(matched, 0) << "no registered model matched a torchvision constructor";
}

}  // namespace
}  // namespace zoo
}  // namespace pipeline
