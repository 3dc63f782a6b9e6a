#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pipeline/interfaces/metric.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/types.h"

namespace pipeline {
namespace {

const MetricContext kPets{.class_names = {"cat", "dog", "bird"}};

std::unique_ptr<Metric> CreateConfusionMatrix() {
  auto metric = testing::CreatePlugin<Metric>(R"pb(name: "confusion_matrix")pb", kPets);
  EXPECT_TRUE(metric.ok()) << metric.status();
  return metric.ok() ? std::move(*metric) : nullptr;
}

// Logits whose argmax is `predictions`.
torch::Tensor LogitsPredicting(std::vector<int64_t> predictions) {
  return torch::one_hot(torch::tensor(predictions, torch::kInt64), 3).to(torch::kFloat);
}

torch::Tensor Labels(std::vector<int64_t> labels) { return torch::tensor(labels, torch::kInt64); }

std::vector<std::pair<std::string, double>> NamesAndValues(const std::vector<MetricValue>& values) {
  std::vector<std::pair<std::string, double>> pairs;
  for (const MetricValue& value : values) pairs.emplace_back(value.name, value.value);
  return pairs;
}

TEST(ConfusionMatrixTest, CountsRecallsAndBalancedAccuracyOfAHandExample) {
  auto metric = CreateConfusionMatrix();
  ASSERT_NE(metric, nullptr);
  ASSERT_EQ(metric->num_sums(), 9);
  std::vector<double> sums(9);
  // Truth:      cat cat cat | dog dog bird
  // Predicted:  cat dog cat | dog dog cat
  metric->Add(LogitsPredicting({0, 1, 0}), Labels({0, 0, 0}), sums);
  metric->Add(LogitsPredicting({1, 1, 0}), Labels({1, 1, 2}), sums);
  EXPECT_EQ(sums, (std::vector<double>{2, 1, 0, 0, 2, 0, 1, 0, 0}));
  const std::vector<std::pair<std::string, double>> expected = {
      {"mean_class_acc", (2.0 / 3 + 1 + 0) / 3},
      {"class_acc/cat", 2.0 / 3},
      {"class_acc/dog", 1},
      {"class_acc/bird", 0},
      {"confusion/cat/cat", 2},
      {"confusion/cat/dog", 1},
      {"confusion/cat/bird", 0},
      {"confusion/dog/cat", 0},
      {"confusion/dog/dog", 2},
      {"confusion/dog/bird", 0},
      {"confusion/bird/cat", 1},
      {"confusion/bird/dog", 0},
      {"confusion/bird/bird", 0}};
  EXPECT_EQ(NamesAndValues(metric->Values(sums)), expected);
}

TEST(ConfusionMatrixTest, ClassesWithoutSamplesAreLeftOutOfTheMean) {
  auto metric = CreateConfusionMatrix();
  ASSERT_NE(metric, nullptr);
  std::vector<double> sums(9);
  metric->Add(LogitsPredicting({0, 0}), Labels({0, 1}), sums);
  const std::vector<MetricValue> values = metric->Values(sums);
  ASSERT_GE(values.size(), 3);
  EXPECT_EQ(NamesAndValues({values.begin(), values.begin() + 3}),
            (std::vector<std::pair<std::string, double>>{
                {"mean_class_acc", 0.5}, {"class_acc/cat", 1}, {"class_acc/dog", 0}}));
  EXPECT_EQ(values.size(), 3 + 9);
}

TEST(ConfusionMatrixTest, NoSamplesGiveZero) {
  auto metric = CreateConfusionMatrix();
  ASSERT_NE(metric, nullptr);
  const std::vector<MetricValue> values = metric->Values(std::vector<double>(9));
  ASSERT_EQ(values.size(), 1 + 9);
  EXPECT_EQ(values[0].name, "mean_class_acc");
  EXPECT_EQ(values[0].value, 0);
}

TEST(ConfusionMatrixTest, OnlyTheMeanIsOnTheEpochLine) {
  auto metric = CreateConfusionMatrix();
  ASSERT_NE(metric, nullptr);
  EXPECT_TRUE(metric->OnEpochLine("mean_class_acc"));
  EXPECT_FALSE(metric->OnEpochLine("class_acc/cat"));
  EXPECT_FALSE(metric->OnEpochLine("confusion/cat/dog"));
}

TEST(ConfusionMatrixTest, RefusesDataWithoutClasses) {
  auto metric = testing::CreatePlugin<Metric>(R"pb(name: "confusion_matrix")pb", {});
  EXPECT_EQ(metric.status().message(),
            "metric \"confusion_matrix\": the training data has no classes");
}

TEST(ConfusionMatrixTest, RefusesLogitsOrLabelsBeyondTheClasses) {
  auto metric = CreateConfusionMatrix();
  ASSERT_NE(metric, nullptr);
  std::vector<double> sums(9);
  EXPECT_THROW(metric->Add(torch::zeros({2, 4}), Labels({0, 1}), sums), c10::Error);
  EXPECT_THROW(metric->Add(LogitsPredicting({0, 2}), Labels({0, 3}), sums), c10::Error);
  EXPECT_THROW(metric->Add(LogitsPredicting({0, 2}), Labels({0, -1}), sums), c10::Error);
  EXPECT_EQ(sums, std::vector<double>(9));
}

TEST(ConfusionMatrixTest, RefusesLabelsThatDoNotFitTheLogits) {
  auto metric = CreateConfusionMatrix();
  ASSERT_NE(metric, nullptr);
  std::vector<double> sums(9);
  // One label would broadcast against the two predictions.
  EXPECT_THROW(metric->Add(LogitsPredicting({0, 2}), Labels({1}), sums), c10::Error);
  EXPECT_EQ(sums, std::vector<double>(9));
}

}  // namespace
}  // namespace pipeline
