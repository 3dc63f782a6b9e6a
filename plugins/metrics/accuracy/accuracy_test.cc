#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pipeline/interfaces/metric.h"
#include "pipeline/testing/plugin_test_util.h"
#include "torch/types.h"
#include "torch/utils.h"

namespace pipeline {
namespace {

const MetricContext kFiveClasses{.class_names = {"a", "b", "c", "d", "e"}};

std::unique_ptr<Metric> CreateAccuracy(int top_k, const MetricContext& context = kFiveClasses) {
  auto metric = testing::CreatePlugin<Metric>(
      "name: \"accuracy\" options { [type.googleapis.com/pipeline.AccuracyOptions] { top_k: " +
          std::to_string(top_k) + " } }",
      context);
  EXPECT_TRUE(metric.ok()) << metric.status();
  return metric.ok() ? std::move(*metric) : nullptr;
}

TEST(AccuracyTest, TopOneCountsExactlyWhatArgmaxGets) {
  torch::manual_seed(0);
  // Rounded logits tie often; the count must follow argmax's tie-breaking.
  const torch::Tensor logits = torch::randint(3, {64, 5}).to(torch::kFloat);
  const torch::Tensor labels = torch::randint(5, {64}, torch::kInt64);
  auto metric = CreateAccuracy(1);
  ASSERT_NE(metric, nullptr);
  ASSERT_EQ(metric->num_sums(), 2);
  std::vector<double> sums(2);
  metric->Add(logits, labels, sums);
  EXPECT_EQ(sums[0], logits.argmax(1).eq(labels).sum().item<double>());
  EXPECT_EQ(sums[1], 64);
  const std::vector<MetricValue> values = metric->Values(sums);
  ASSERT_EQ(values.size(), 1);
  EXPECT_EQ(values[0].name, "acc");
  EXPECT_DOUBLE_EQ(values[0].value, sums[0] / 64);
}

TEST(AccuracyTest, TopKCountsLabelsAmongTheKHighestAcrossBatches) {
  const torch::Tensor logits = torch::tensor({0.1, 0.5, 0.2, 0.0, 0.3,   // top 2: 1, 4
                                              0.9, 0.0, 0.8, 0.1, 0.2,   // top 2: 0, 2
                                              0.0, 0.1, 0.2, 0.3, 0.4})  // top 2: 4, 3
                                   .view({3, 5});
  const torch::Tensor labels = torch::tensor({4, 1, 3}, torch::kInt64);
  auto metric = CreateAccuracy(2);
  ASSERT_NE(metric, nullptr);
  std::vector<double> sums(2);
  metric->Add(logits, labels, sums);
  metric->Add(logits.slice(0, 0, 2), labels.slice(0, 0, 2), sums);
  EXPECT_EQ(sums, (std::vector<double>{3, 5}));
  const std::vector<MetricValue> values = metric->Values(sums);
  ASSERT_EQ(values.size(), 1);
  EXPECT_EQ(values[0].name, "acc_top2");
  EXPECT_DOUBLE_EQ(values[0].value, 0.6);
}

TEST(AccuracyTest, NoSamplesGiveZero) {
  auto metric = CreateAccuracy(5);
  ASSERT_NE(metric, nullptr);
  const std::vector<MetricValue> values = metric->Values({0, 0});
  ASSERT_EQ(values.size(), 1);
  EXPECT_EQ(values[0].name, "acc_top5");
  EXPECT_EQ(values[0].value, 0);
}

TEST(AccuracyTest, RefusesLabelsThatDoNotFitTheLogits) {
  auto metric = CreateAccuracy(1);
  ASSERT_NE(metric, nullptr);
  std::vector<double> sums(2);
  // Both broadcast against the 4 predictions.
  EXPECT_THROW(metric->Add(torch::zeros({4, 5}), torch::zeros({1}, torch::kInt64), sums),
               c10::Error);
  EXPECT_THROW(metric->Add(torch::zeros({4, 5}), torch::zeros({4, 1}, torch::kInt64), sums),
               c10::Error);
  EXPECT_EQ(sums, std::vector<double>(2));
}

TEST(AccuracyTest, IsTheDefaultMetric) {
  EXPECT_EQ(Registry<Metric>::Global().DefaultFor("metrics"), "accuracy");
}

TEST(AccuracyTest, RefusesTopKBelowOne) {
  auto metric = testing::CreatePlugin<Metric>(
      R"pb(name: "accuracy"
           options {
             [type.googleapis.com/pipeline.AccuracyOptions] { top_k: 0 }
           })pb",
      kFiveClasses);
  EXPECT_EQ(metric.status().message(), "options: top_k: 0; must be at least 1");
}

TEST(AccuracyTest, RefusesTopKAboveTheNumberOfClasses) {
  auto metric = testing::CreatePlugin<Metric>(
      R"pb(name: "accuracy"
           options {
             [type.googleapis.com/pipeline.AccuracyOptions] { top_k: 5 }
           })pb",
      {.class_names = {"cat", "dog"}});
  EXPECT_EQ(metric.status().message(),
            "metric \"accuracy\": options.top_k: 5, but the training data has 2 classes; top_k "
            "must be at most the number of classes");
}

}  // namespace
}  // namespace pipeline
