#include "pipeline/testing/loss_conformance.h"

#include <cmath>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/loss.h"
#include "pipeline/testing/conformance_config.h"
#include "torch/types.h"

namespace pipeline {
namespace testing {

void PrintTo(const LossConformanceParams& params, std::ostream* out) {
  *out << "loss \"" << params.plugin << "\" with options {" << params.options << "}"
       << (params.shift_invariant ? "" : ", not shift-invariant");
}

std::string LossConformanceTestName(const ::testing::TestParamInfo<LossConformanceParams>& info) {
  return ConformanceInstanceName(info.index);
}

namespace {

constexpr int64_t kBatch = 6;
constexpr int64_t kClasses = 5;

struct Target {
  std::string kind;  // for messages
  torch::Tensor values;
};

struct Batch {
  torch::Tensor logits;  // kBatch x kClasses
  // Class indices, then class probabilities (rows summing to 1).
  std::vector<Target> targets;
};

Batch MakeBatch(torch::ScalarType dtype, uint64_t seed) {
  torch::manual_seed(seed);
  Batch batch;
  batch.logits = 3 * torch::randn({kBatch, kClasses}, dtype);
  batch.targets = {
      {"class indices", torch::randint(0, kClasses, {kBatch}, torch::kLong)},
      {"class probabilities", torch::softmax(torch::randn({kBatch, kClasses}, dtype), 1)}};
  return batch;
}

absl::StatusOr<std::unique_ptr<Loss>> Create(const LossConformanceParams& params) {
  absl::StatusOr<PluginConfig> config = ConformanceConfig<Loss>(params.plugin, params.options);
  if (!config.ok()) return config.status();
  return Registry<Loss>::Global().Create(*config, LossContext{kClasses});
}

// LibTorch's losses throw on bad input; the strategy's training step, where
// the trainer calls Compute, turns a throw into an error status.
absl::StatusOr<torch::Tensor> Compute(const Loss& loss, const torch::Tensor& logits,
                                      const torch::Tensor& targets,
                                      at::Reduction::Reduction reduction) {
  try {
    return loss.Compute(logits, targets, reduction);
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(e.what_without_backtrace());
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(e.what());
  }
}

// For the loss of one configuration, where any error fails the test.
double Value(const Loss& loss, const torch::Tensor& logits, const torch::Tensor& targets,
             at::Reduction::Reduction reduction) {
  absl::StatusOr<torch::Tensor> value = Compute(loss, logits, targets, reduction);
  EXPECT_TRUE(value.ok()) << value.status();
  return value.ok() ? value->item<double>() : std::nan("");
}

const char* NameOf(at::Reduction::Reduction reduction) {
  return reduction == at::Reduction::Mean ? "Mean" : "Sum";
}

#define CREATE_OR_RETURN(loss)                                         \
  absl::StatusOr<std::unique_ptr<Loss>> created_ = Create(GetParam()); \
  ASSERT_TRUE(created_.ok()) << created_.status();                     \
  const Loss& loss = **created_

TEST_P(LossConformanceTest, GivesAFiniteScalarForRandomLogits) {
  CREATE_OR_RETURN(loss);
  const Batch batch = MakeBatch(torch::kFloat, 1);
  for (double scale : {1.0, 100.0}) {
    const torch::Tensor logits = batch.logits * scale;
    for (const Target& target : batch.targets) {
      for (auto reduction : {at::Reduction::Mean, at::Reduction::Sum}) {
        const std::string where =
            absl::StrCat(target.kind, ", ", NameOf(reduction), ", logits up to ",
                         logits.abs().max().item<double>());
        absl::StatusOr<torch::Tensor> value = Compute(loss, logits, target.values, reduction);
        ASSERT_TRUE(value.ok()) << where << ": " << value.status();
        ASSERT_TRUE(value->defined()) << where;
        EXPECT_EQ(value->dim(), 0) << where << ": not a scalar but " << value->sizes();
        EXPECT_TRUE(value->is_floating_point()) << where;
        if (value->numel() == 1) {
          EXPECT_TRUE(std::isfinite(value->item<double>()))
              << where << ": " << value->item<double>();
        }
      }
    }
  }
}

TEST_P(LossConformanceTest, MeanIsTheMeanOfPerSampleLossesAndSumTheirSum) {
  CREATE_OR_RETURN(loss);
  const Batch batch = MakeBatch(torch::kFloat, 2);
  for (const Target& target : batch.targets) {
    double sum = 0;
    for (int64_t i = 0; i < kBatch; ++i) {
      sum += Value(loss, batch.logits.narrow(0, i, 1), target.values.narrow(0, i, 1),
                   at::Reduction::Mean);
    }
    const double mean = Value(loss, batch.logits, target.values, at::Reduction::Mean);
    EXPECT_NEAR(mean, sum / kBatch, 1e-5 * std::abs(sum / kBatch) + 1e-6)
        << target.kind << ": Mean over " << kBatch
        << " samples is not the mean of their losses one at a time";
    EXPECT_NEAR(Value(loss, batch.logits, target.values, at::Reduction::Sum), sum,
                1e-5 * std::abs(sum) + 1e-6)
        << target.kind << ": Sum over " << kBatch
        << " samples is not the sum of their losses one at a time";
  }
}

TEST_P(LossConformanceTest, ClassIndicesEqualTheirOneHotProbabilities) {
  CREATE_OR_RETURN(loss);
  const Batch batch = MakeBatch(torch::kFloat, 3);
  const torch::Tensor& labels = batch.targets[0].values;
  const torch::Tensor one_hot = torch::one_hot(labels, kClasses).to(batch.logits.scalar_type());
  for (auto reduction : {at::Reduction::Mean, at::Reduction::Sum}) {
    const double from_indices = Value(loss, batch.logits, labels, reduction);
    const double from_probabilities = Value(loss, batch.logits, one_hot, reduction);
    EXPECT_NEAR(from_indices, from_probabilities, 1e-6 * std::abs(from_indices) + 1e-6)
        << NameOf(reduction) << ": class indices and their one-hot probabilities differ";
  }
}

TEST_P(LossConformanceTest, GradientMatchesCentralFiniteDifferences) {
  CREATE_OR_RETURN(loss);
  const Batch batch = MakeBatch(torch::kDouble, 4);
  constexpr double kStep = 1e-6;
  for (const Target& target : batch.targets) {
    for (auto reduction : {at::Reduction::Mean, at::Reduction::Sum}) {
      const std::string where = absl::StrCat(target.kind, ", ", NameOf(reduction));
      const torch::Tensor logits = batch.logits.clone().requires_grad_();
      absl::StatusOr<torch::Tensor> value = Compute(loss, logits, target.values, reduction);
      ASSERT_TRUE(value.ok()) << where << ": " << value.status();
      ASSERT_TRUE(value->requires_grad()) << where << ": no gradient reaches the logits";
      value->backward();
      ASSERT_TRUE(logits.grad().defined()) << where << ": no gradient reaches the logits";
      const torch::Tensor analytic = logits.grad();

      torch::NoGradGuard no_grad;
      torch::Tensor numeric = torch::zeros_like(batch.logits);
      for (int64_t j = 0; j < numeric.numel(); ++j) {
        torch::Tensor plus = batch.logits.clone();
        torch::Tensor minus = batch.logits.clone();
        plus.view(-1)[j].add_(kStep);
        minus.view(-1)[j].sub_(kStep);
        numeric.view(-1)[j].fill_((Value(loss, plus, target.values, reduction) -
                                   Value(loss, minus, target.values, reduction)) /
                                  (2 * kStep));
      }
      EXPECT_TRUE(torch::allclose(analytic, numeric, 1e-5, 1e-7))
          << where << ": the gradient differs from the finite differences by up to "
          << (analytic - numeric).abs().max().item<double>() << "\nautograd:\n"
          << analytic << "\nfinite differences:\n"
          << numeric;
    }
  }
}

TEST_P(LossConformanceTest, AddingAConstantToARowOfLogitsChangesNothing) {
  if (!GetParam().shift_invariant) GTEST_SKIP() << "declared not shift-invariant";
  CREATE_OR_RETURN(loss);
  const Batch batch = MakeBatch(torch::kDouble, 5);
  const torch::Tensor shifted = batch.logits + 10 * torch::randn({kBatch, 1}, torch::kDouble);
  for (const Target& target : batch.targets) {
    for (auto reduction : {at::Reduction::Mean, at::Reduction::Sum}) {
      const double original = Value(loss, batch.logits, target.values, reduction);
      EXPECT_NEAR(Value(loss, shifted, target.values, reduction), original,
                  1e-9 * std::abs(original) + 1e-12)
          << target.kind << ", " << NameOf(reduction)
          << ": adding a constant to each row's logits changed the loss";
    }
  }
}

TEST_P(LossConformanceTest, WrongShapedTargetsAreErrorsNotCrashes) {
  CREATE_OR_RETURN(loss);
  const Batch batch = MakeBatch(torch::kFloat, 6);
  const torch::Tensor& labels = batch.targets[0].values;
  auto probabilities = [](int64_t rows, int64_t classes) {
    return torch::softmax(torch::randn({rows, classes}), 1);
  };
  const std::vector<Target> wrong = {
      {"class indices for one sample more",
       torch::randint(0, kClasses, {kBatch + 1}, torch::kLong)},
      {"class indices as a column", labels.unsqueeze(1)},
      {"class probabilities over one class more", probabilities(kBatch, kClasses + 1)},
      {"class probabilities for one sample more", probabilities(kBatch + 1, kClasses)},
      {"one row of class probabilities for the whole batch", probabilities(1, kClasses)},
      {"class probabilities as a vector", probabilities(1, kClasses).view({kClasses})},
  };
  for (const Target& target : wrong) {
    for (auto reduction : {at::Reduction::Mean, at::Reduction::Sum}) {
      absl::StatusOr<torch::Tensor> value = Compute(loss, batch.logits, target.values, reduction);
      EXPECT_FALSE(value.ok()) << target.kind << " " << target.values.sizes() << " for logits "
                               << batch.logits.sizes() << ", " << NameOf(reduction)
                               << ": gave a loss instead of an error";
      if (!value.ok()) {
        EXPECT_FALSE(value.status().message().empty()) << target.kind << ": an empty message";
      }
    }
  }
}

}  // namespace

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LossConformanceTest);

}  // namespace testing
}  // namespace pipeline
