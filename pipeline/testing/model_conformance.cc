#include "pipeline/testing/model_conformance.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/conformance_config.h"
#include "pipeline/util/torch_status.h"
#include "torch/types.h"
#include "torch/utils.h"

namespace pipeline {
namespace testing {

void PrintTo(const ModelConformanceParams& params, std::ostream* out) {
  *out << "model \"" << params.plugin << "\" with options {" << params.options << "} on "
       << params.image_size << "x" << params.image_size << " images";
}

std::string ModelConformanceTestName(const ::testing::TestParamInfo<ModelConformanceParams>& info) {
  return ConformanceInstanceName(info.index);
}

namespace {

// What the tests build, unless they vary it.
constexpr int64_t kClasses = 10;
constexpr int64_t kChannels = 3;
constexpr int64_t kBatch = 3;
constexpr uint64_t kSeed = 7;

// Logits computed along another path (a batch of another size, another
// memory format) may come from other kernels, which sum in another order:
// they agree to this share of the largest logit. Relative only: at their
// initialisation some models' eval-mode logits are tiny (the MobileNets' and
// EfficientNet's around 1e-10 and less, BatchNorm's running statistics
// being still 0 and 1), and any absolute tolerance would pass anything.
constexpr double kRelativeTolerance = 1e-4;

absl::StatusOr<std::unique_ptr<Model>> Build(const ModelConformanceParams& params,
                                             int64_t classes = kClasses,
                                             int64_t channels = kChannels) {
  absl::StatusOr<PluginConfig> config = ConformanceConfig<Model>(params.plugin, params.options);
  if (!config.ok()) return config.status();
  return Registry<Model>::Global().Create(*config, ModelContext{classes, channels});
}

// The model most tests look at (kClasses, kChannels), built after
// torch::manual_seed(kSeed) once per instance for the whole test binary:
// constructing the largest models (VGG's classifier alone holds 120M
// weights) takes longer than anything else the suite does. Tests only look
// at it or run it in eval mode without gradients, which changes nothing in a
// model that keeps the rules (one that changes itself there fails
// EvalModeIsDeterministic), and leave it in its memory format; tests that
// train build their own.
absl::StatusOr<Model*> Shared(const ModelConformanceParams& params) {
  static auto* const models =
      new std::map<std::pair<std::string, std::string>, std::unique_ptr<Model>>;
  const std::pair<std::string, std::string> key{params.plugin, params.options};
  auto it = models->find(key);
  if (it == models->end()) {
    torch::manual_seed(kSeed);
    absl::StatusOr<std::unique_ptr<Model>> model = Build(params);
    if (!model.ok()) return model.status();
    it = models->emplace(key, *std::move(model)).first;
  }
  return it->second.get();
}

#define SHARED_OR_RETURN(model)                                  \
  absl::StatusOr<Model*> model##_shared_ = Shared(GetParam());   \
  ASSERT_TRUE(model##_shared_.ok()) << model##_shared_.status(); \
  Model& model = **model##_shared_

#define BUILD_OR_RETURN(model, ...)                                                         \
  absl::StatusOr<std::unique_ptr<Model>> model##_built_ = Build(GetParam(), ##__VA_ARGS__); \
  ASSERT_TRUE(model##_built_.ok()) << model##_built_.status();                              \
  Model& model = **model##_built_

torch::Tensor Images(int64_t batch, int64_t channels, int64_t size, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randn({batch, channels, size, size});
}

// As the strategies call a model: whatever it throws becomes a status.
absl::StatusOr<torch::Tensor> Forward(Model& model, const torch::Tensor& images) {
  return CallTorch("forward", [&] { return model.forward(images); });
}

std::string Mode(const Model& model) { return model.is_training() ? "training" : "eval"; }

// Checks that `images` give one row of `classes` finite float logits each.
void ExpectLogits(Model& model, const torch::Tensor& images, int64_t classes) {
  const std::string where = absl::StrCat(Mode(model), " mode, images ", c10::str(images.sizes()),
                                         ", ", classes, " classes");
  absl::StatusOr<torch::Tensor> logits = Forward(model, images);
  ASSERT_TRUE(logits.ok()) << where << ": " << logits.status();
  ASSERT_TRUE(logits->defined()) << where << ": undefined logits";
  EXPECT_EQ(logits->sizes().vec(), (std::vector<int64_t>{images.size(0), classes}))
      << where << ": logits of the wrong shape";
  EXPECT_EQ(logits->scalar_type(), torch::kFloat) << where;
  EXPECT_TRUE(logits->isfinite().all().item<bool>()) << where << ": logits not finite\n" << *logits;
}

// `actual` equals `expected` to the tolerance of another computation path.
void ExpectClose(const torch::Tensor& actual, const torch::Tensor& expected,
                 const std::string& what) {
  ASSERT_EQ(actual.numel(), expected.numel()) << what;
  const double scale = expected.abs().max().item<double>();
  const double difference = (actual.reshape(-1) - expected.reshape(-1)).abs().max().item<double>();
  EXPECT_LE(difference, kRelativeTolerance * scale)
      << what << ": the logits differ by up to " << difference << " (largest logit " << scale
      << ")\nexpected:\n"
      << expected << "\ngot:\n"
      << actual;
}

std::vector<std::string> ParameterNames(const Model& model) {
  std::vector<std::string> names;
  for (const auto& item : model.named_parameters()) names.push_back(item.key());
  return names;
}

std::vector<std::string> BufferNames(const Model& model) {
  std::vector<std::string> names;
  for (const auto& item : model.named_buffers()) names.push_back(item.key());
  return names;
}

bool InHead(const std::string& name, const std::vector<std::string>& prefixes) {
  for (const std::string& prefix : prefixes) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// The parameters, then the buffers, in their order.
std::vector<std::pair<std::string, torch::Tensor>> StateOf(const Model& model) {
  std::vector<std::pair<std::string, torch::Tensor>> state;
  for (const auto& item : model.named_parameters()) state.emplace_back(item.key(), item.value());
  for (const auto& item : model.named_buffers()) state.emplace_back(item.key(), item.value());
  return state;
}

// What trainer.memory_format: CHANNELS_LAST does to a model before training
// (pipeline/trainer/run_setup.cc), or its undoing.
void SetMemoryFormat(Model& model, torch::MemoryFormat format) {
  torch::NoGradGuard no_grad;
  for (torch::Tensor& p : model.parameters()) {
    if (p.dim() == 4) p.set_data(p.contiguous(format));
  }
  for (torch::Tensor& b : model.buffers()) {
    if (b.dim() == 4) b.set_data(b.contiguous(format));
  }
}

TEST_P(ModelConformanceTest, ForwardGivesOneRowOfFiniteLogitsPerImage) {
  const int64_t size = GetParam().image_size;
  SHARED_OR_RETURN(shared);
  shared.eval();
  {
    torch::NoGradGuard no_grad;
    ExpectLogits(shared, Images(1, kChannels, size, 1), kClasses);
    ExpectLogits(shared, Images(kBatch, kChannels, size, 2), kClasses);
  }
  // The other count of channels and of classes, in both modes.
  constexpr int64_t kOtherChannels = 1, kOtherClasses = 2;
  BUILD_OR_RETURN(model, kOtherClasses, kOtherChannels);
  model.eval();
  {
    torch::NoGradGuard no_grad;
    ExpectLogits(model, Images(1, kOtherChannels, size, 3), kOtherClasses);
    ExpectLogits(model, Images(kBatch, kOtherChannels, size, 4), kOtherClasses);
  }
  model.train();
  ExpectLogits(model, Images(kBatch, kOtherChannels, size, 5), kOtherClasses);
}

TEST_P(ModelConformanceTest, EvalModeIsDeterministic) {
  SHARED_OR_RETURN(model);
  model.eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor images = Images(kBatch, kChannels, GetParam().image_size, 6);
  absl::StatusOr<torch::Tensor> first = Forward(model, images);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<torch::Tensor> second = Forward(model, images);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(torch::equal(*first, *second))
      << "the same images gave other logits the second time, by up to "
      << (*first - *second).abs().max().item<double>();
}

TEST_P(ModelConformanceTest, EvalLogitsOfAnImageDoNotDependOnTheRestOfTheBatch) {
  SHARED_OR_RETURN(model);
  model.eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor images = Images(kBatch, kChannels, GetParam().image_size, 7);
  absl::StatusOr<torch::Tensor> together = Forward(model, images);
  ASSERT_TRUE(together.ok()) << together.status();
  for (int64_t i = 0; i < kBatch; ++i) {
    absl::StatusOr<torch::Tensor> alone = Forward(model, images.narrow(0, i, 1));
    ASSERT_TRUE(alone.ok()) << alone.status();
    ExpectClose(*alone, together->narrow(0, i, 1),
                absl::StrCat("image ", i, " alone and in a batch of ", kBatch));
  }
}

TEST_P(ModelConformanceTest, EveryTrainableParameterGetsAFiniteGradient) {
  BUILD_OR_RETURN(model);
  model.train();
  const torch::Tensor images = Images(kBatch, kChannels, GetParam().image_size, 8);
  // The auxiliary classifiers' logits join the main ones, as they join the
  // training loss (TrainingLoss): their heads learn from them alone.
  const absl::Status backward = CallTorch("forward and backward", [&] {
    torch::Tensor objective = model.forward(images).sum();
    for (const AuxiliaryLogits& auxiliary : model.auxiliary_logits()) {
      objective = objective + auxiliary.logits.sum();
    }
    objective.backward();
  });
  ASSERT_TRUE(backward.ok()) << backward;
  std::vector<std::string> without, not_finite;
  int64_t trainable = 0;
  for (const auto& item : model.named_parameters()) {
    if (!item.value().requires_grad()) continue;
    ++trainable;
    const torch::Tensor& grad = item.value().grad();
    if (!grad.defined()) {
      without.push_back(item.key());
    } else if (!grad.isfinite().all().item<bool>()) {
      not_finite.push_back(item.key());
    }
  }
  EXPECT_GT(trainable, 0) << "no parameter requires grad";
  EXPECT_TRUE(without.empty()) << "no gradient reaches " << without.size() << " of " << trainable
                               << " parameters: " << absl::StrJoin(without, ", ");
  EXPECT_TRUE(not_finite.empty()) << "gradients not finite: " << absl::StrJoin(not_finite, ", ");
}

TEST_P(ModelConformanceTest, HeadPrefixesNameExactlyTheParametersShapedByTheClassCount) {
  SHARED_OR_RETURN(ten);
  BUILD_OR_RETURN(two, 2);
  const std::vector<std::string> prefixes = ten.head_prefixes();
  ASSERT_FALSE(prefixes.empty()) << "head_prefixes() names no classifier head";
  EXPECT_EQ(two.head_prefixes(), prefixes) << "the head depends on the class count";
  const auto two_parameters = two.named_parameters();
  const auto ten_parameters = ten.named_parameters();
  ASSERT_EQ(two_parameters.keys(), ten_parameters.keys())
      << "2 and 10 classes give parameters of other names";

  for (const std::string& prefix : prefixes) {
    const std::vector<std::string> names = ten_parameters.keys();
    EXPECT_TRUE(std::any_of(names.begin(), names.end(),
                            [&](const std::string& name) { return InHead(name, {prefix}); }))
        << "head prefix \"" << prefix << "\" names no parameter";
  }
  std::set<std::string> shaped_by_classes, in_head;
  for (const auto& item : ten_parameters) {
    if (two_parameters[item.key()].sizes() != item.value().sizes()) {
      shaped_by_classes.insert(item.key());
    }
    if (InHead(item.key(), prefixes)) in_head.insert(item.key());
  }
  EXPECT_EQ(in_head, shaped_by_classes)
      << "the parameters under head_prefixes() {" << absl::StrJoin(prefixes, ", ")
      << "} (first) are not those whose shape follows num_classes (second)";
}

TEST_P(ModelConformanceTest, ParameterAndBufferNamesAreStableAcrossConstructions) {
  SHARED_OR_RETURN(first);
  BUILD_OR_RETURN(second);
  EXPECT_EQ(ParameterNames(first), ParameterNames(second))
      << "two constructions name or order their parameters differently";
  EXPECT_EQ(BufferNames(first), BufferNames(second))
      << "two constructions name or order their buffers differently";
}

TEST_P(ModelConformanceTest, TheSameSeedGivesTheSameInitialWeights) {
  SHARED_OR_RETURN(first);  // built after torch::manual_seed(kSeed), never trained
  torch::manual_seed(kSeed);
  BUILD_OR_RETURN(second);
  // By position: the names are another test's rule.
  const std::vector<std::pair<std::string, torch::Tensor>> a = StateOf(first);
  const std::vector<std::pair<std::string, torch::Tensor>> b = StateOf(second);
  ASSERT_EQ(a.size(), b.size()) << "two constructions hold different numbers of tensors";
  std::vector<std::string> differing;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].second.sizes() != b[i].second.sizes() || !torch::equal(a[i].second, b[i].second)) {
      differing.push_back(a[i].first);
    }
  }
  EXPECT_TRUE(differing.empty()) << "after the same torch::manual_seed, " << differing.size()
                                 << " of " << a.size() << " tensors start differently: "
                                 << absl::StrJoin(differing, ", ");
}

TEST_P(ModelConformanceTest, ChannelsLastGivesTheSameLogits) {
  SHARED_OR_RETURN(model);
  model.eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor images = Images(kBatch, kChannels, GetParam().image_size, 9);
  absl::StatusOr<torch::Tensor> contiguous = Forward(model, images);
  ASSERT_TRUE(contiguous.ok()) << contiguous.status();
  SetMemoryFormat(model, torch::MemoryFormat::ChannelsLast);
  absl::StatusOr<torch::Tensor> channels_last =
      Forward(model, images.contiguous(torch::MemoryFormat::ChannelsLast));
  SetMemoryFormat(model, torch::MemoryFormat::Contiguous);  // as the other tests expect it
  ASSERT_TRUE(channels_last.ok()) << channels_last.status();
  ExpectClose(*channels_last, *contiguous, "channels_last and contiguous");
}

TEST_P(ModelConformanceTest, AWrongChannelCountIsAnErrorNotACrash) {
  SHARED_OR_RETURN(model);
  model.eval();
  torch::NoGradGuard no_grad;
  for (int64_t channels : {kChannels - 2, kChannels + 1}) {
    const torch::Tensor images = Images(kBatch, channels, GetParam().image_size, 10);
    absl::StatusOr<torch::Tensor> logits = Forward(model, images);
    EXPECT_FALSE(logits.ok()) << images.sizes() << " for a model of " << kChannels
                              << " input channels gave logits " << logits->sizes()
                              << " instead of an error";
    if (!logits.ok()) {
      EXPECT_FALSE(logits.status().message().empty()) << "an error without a message";
    }
  }
}

}  // namespace

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ModelConformanceTest);

}  // namespace testing
}  // namespace pipeline
