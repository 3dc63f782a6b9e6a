#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
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

// `config` with its options' `aux_logits` (a bool, as torchvision names the
// switch of its auxiliary classifiers) off; nullopt for a model without one.
std::optional<PluginConfig> WithoutAuxiliaryClassifiers(const PluginConfig& config) {
  const google::protobuf::Message* defaults =
      Registry<Model>::Global().DefaultOptions(config.name());
  if (defaults == nullptr) return std::nullopt;
  std::unique_ptr<google::protobuf::Message> options(defaults->New());
  if (!config.options().UnpackTo(options.get())) return std::nullopt;
  const google::protobuf::FieldDescriptor* aux =
      options->GetDescriptor()->FindFieldByName("aux_logits");
  if (aux == nullptr || aux->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_BOOL) {
    return std::nullopt;
  }
  options->GetReflection()->SetBool(options.get(), aux, false);
  PluginConfig without = config;
  without.mutable_options()->PackFrom(*options);
  return without;
}

// Every variant that torchvision has, built as the tool builds it, has
// torchvision's parameter count; or, where its weights drop the auxiliary
// classifiers (googlenet(weights=...) removes aux1 and aux2, so GoogLeNet's
// published count is of the model without them), the same model with
// aux_logits off has it.
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
    int64_t count = ParameterCount(**model);
    if (count != figures.parameters) {
      if (std::optional<PluginConfig> without = WithoutAuxiliaryClassifiers(variant.config)) {
        absl::StatusOr<std::unique_ptr<Model>> plain =
            Registry<Model>::Global().Create(*without, ModelContext{kClasses, 3});
        ASSERT_TRUE(plain.ok()) << plain.status();
        count = ParameterCount(**plain);
      }
    }
    EXPECT_EQ(count, figures.parameters)
        << variant.model << " " << variant.variant << " as torchvision's " << torchvision;
  }
  EXPECT_GT(matched, 0) << "no registered model matched a torchvision constructor";
}

}  // namespace
}  // namespace zoo
}  // namespace pipeline
