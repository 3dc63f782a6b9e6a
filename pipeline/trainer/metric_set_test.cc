#include "pipeline/trainer/metric_set.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/empty.pb.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/metric.h"
#include "torch/types.h"

namespace pipeline {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Three sums, to see that each metric gets exactly its own slice: samples
// labelled 0, the largest logits' sum, samples. "zero_share" is on the
// epoch line and better higher; "max_logit" neither.
class FakeMetric : public Metric {
 public:
  int num_sums() const override { return 3; }
  void Add(const torch::Tensor& logits, const torch::Tensor& labels,
           std::vector<double>& sums) const override {
    EXPECT_EQ(sums.size(), 3u);
    sums[0] += labels.eq(0).sum().item<double>();
    sums[1] += std::get<0>(logits.max(1)).sum().item<double>();
    sums[2] += labels.size(0);
  }
  std::vector<MetricValue> Values(const std::vector<double>& sums) const override {
    EXPECT_EQ(sums.size(), 3u);
    const double n = sums[2];
    return {{"zero_share", n > 0 ? sums[0] / n : 0.0}, {"max_logit", n > 0 ? sums[1] / n : 0.0}};
  }
  bool HigherIsBetter(const std::string& name) const override { return name != "max_logit"; }
  bool OnEpochLine(const std::string& name) const override { return name != "max_logit"; }
};

absl::StatusOr<std::unique_ptr<Metric>> CreateFakeMetric(const google::protobuf::Empty&,
                                                         const MetricContext& context) {
  if (context.class_names.empty()) return absl::InvalidArgumentError("needs classes");
  return std::make_unique<FakeMetric>();
}

PIPELINE_REGISTER_PLUGIN(Metric, "metric_set_test_fake", google::protobuf::Empty,
                         "test metric with three sums", CreateFakeMetric);

PipelineConfig Config(const std::string& text) {
  PipelineConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

const std::vector<std::string> kClasses = {"a", "b", "c"};

MetricSet Create(const std::string& text) {
  absl::StatusOr<MetricSet> set = MetricSet::Create(Config(text), kClasses);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *std::move(set) : *MetricSet::Create(PipelineConfig(), kClasses);
}

std::vector<std::string> NamesOf(const std::vector<Figure>& figures) {
  std::vector<std::string> names;
  for (const Figure& figure : figures) names.push_back(figure.name);
  return names;
}

TEST(MetricSetTest, WithoutMetricsOnlyTheLoss) {
  const MetricSet set = Create("");
  EXPECT_EQ(set.EmptySums().size(), 2u);
  const std::vector<Figure> figures = set.Values({3.0, 4.0});
  ASSERT_EQ(figures.size(), 1u);
  EXPECT_EQ(figures[0].name, "loss");
  EXPECT_DOUBLE_EQ(figures[0].value, 0.75);
  EXPECT_FALSE(figures[0].higher_is_better);
  EXPECT_TRUE(figures[0].on_epoch_line);
  EXPECT_THAT(set.Names(), ElementsAre("loss"));
}

TEST(MetricSetTest, SumsLayoutIsLossSamplesThenEachMetricsOwn) {
  const MetricSet set = Create(
      "metrics { name: \"accuracy\" } metrics { name: \"metric_set_test_fake\" }");
  std::vector<double> sums = set.EmptySums();
  ASSERT_EQ(sums.size(), 2u + 2u + 3u);
  // Row 0 predicts class 0 (label 0), row 1 class 2 (label 1): one correct.
  const torch::Tensor logits = torch::tensor({{3.0f, 1.0f, 0.0f}, {0.0f, 1.0f, 5.0f}});
  const torch::Tensor labels = torch::tensor({0, 1}, torch::kLong);
  set.Add(logits, labels, /*loss_sum=*/1.5, sums);
  EXPECT_THAT(sums, ElementsAre(1.5, 2.0,         // loss * samples, samples
                                1.0, 2.0,         // accuracy: correct, samples
                                1.0, 8.0, 2.0));  // fake: label 0, max logits, samples
  set.Add(logits.slice(0, 0, 1), labels.slice(0, 0, 1), 0.5, sums);
  EXPECT_THAT(sums, ElementsAre(2.0, 3.0, 2.0, 3.0, 2.0, 11.0, 3.0));
  EXPECT_EQ(MetricSet::Samples(sums), 3.0);
}

TEST(MetricSetTest, ValuesNamesOrderAndWhatEachMetricSaysOfThem) {
  const MetricSet set = Create(
      "metrics { name: \"accuracy\" } metrics { name: \"metric_set_test_fake\" }");
  const std::vector<Figure> figures = set.Values({2.0, 4.0, 3.0, 4.0, 1.0, 10.0, 4.0});
  EXPECT_THAT(NamesOf(figures), ElementsAre("loss", "acc", "zero_share", "max_logit"));
  EXPECT_DOUBLE_EQ(figures[0].value, 0.5);
  EXPECT_DOUBLE_EQ(figures[1].value, 0.75);
  EXPECT_DOUBLE_EQ(figures[2].value, 0.25);
  EXPECT_DOUBLE_EQ(figures[3].value, 2.5);
  EXPECT_FALSE(figures[0].higher_is_better);
  EXPECT_TRUE(figures[1].higher_is_better);
  EXPECT_TRUE(figures[2].higher_is_better);
  EXPECT_FALSE(figures[3].higher_is_better);
  EXPECT_TRUE(figures[2].on_epoch_line);
  EXPECT_FALSE(figures[3].on_epoch_line);
  EXPECT_THAT(set.Names(), ElementsAre("loss", "acc", "zero_share", "max_logit"));
}

TEST(MetricSetTest, APassWithoutSamplesIsAllZero) {
  const MetricSet set = Create("metrics { name: \"accuracy\" }");
  for (const Figure& figure : set.Values(set.EmptySums())) {
    EXPECT_EQ(figure.value, 0.0) << figure.name;
  }
}

// What the ranks add up with one all-reduce: sums of two halves, added
// element-wise, give the figures of the whole.
TEST(MetricSetTest, SumsOfPartsAddUpToTheWhole) {
  const MetricSet set = Create(
      "metrics { name: \"accuracy\" } metrics { name: \"metric_set_test_fake\" }");
  torch::manual_seed(1);
  const torch::Tensor logits = torch::randn({10, 3});
  const torch::Tensor labels = torch::randint(3, {10}, torch::kLong);
  std::vector<double> whole = set.EmptySums(), first = set.EmptySums(),
                      second = set.EmptySums();
  set.Add(logits, labels, 7.0, whole);
  set.Add(logits.slice(0, 0, 4), labels.slice(0, 0, 4), 3.0, first);
  set.Add(logits.slice(0, 4), labels.slice(0, 4), 4.0, second);
  for (size_t i = 0; i < first.size(); ++i) first[i] += second[i];
  const std::vector<Figure> expected = set.Values(whole), added = set.Values(first);
  ASSERT_EQ(expected.size(), added.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(added[i].value, expected[i].value, 1e-6) << expected[i].name;
  }
}

TEST(MetricSetTest, ErrorsNameTheMetricsEntry) {
  absl::StatusOr<MetricSet> unknown = MetricSet::Create(
      Config("metrics { name: \"accuracy\" } metrics { name: \"no_such_metric\" }"), kClasses);
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(std::string(unknown.status().message()),
              HasSubstr("metrics[1]: name: \"no_such_metric\" is not a registered metric"));

  absl::StatusOr<MetricSet> too_many = MetricSet::Create(
      Config("metrics { name: \"accuracy\" options { "
             "[type.googleapis.com/pipeline.AccuracyOptions] { top_k: 5 } } }"),
      kClasses);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_many.status().message()),
              HasSubstr("metrics[0]: metric \"accuracy\": options.top_k: 5"));

  absl::StatusOr<MetricSet> no_classes =
      MetricSet::Create(Config("metrics { name: \"metric_set_test_fake\" }"), {});
  ASSERT_FALSE(no_classes.ok());
  EXPECT_THAT(std::string(no_classes.status().message()),
              HasSubstr("metrics[0]: metric \"metric_set_test_fake\": needs classes"));
}

TEST(BeatsBestTest, InTheFiguresDirectionByMoreThanMinDelta) {
  const Figure accuracy{"acc", 0.9, true, true}, loss{"loss", 0.3, true, false};
  const double none = std::nan("");
  EXPECT_TRUE(BeatsBest(accuracy, none));
  EXPECT_TRUE(BeatsBest(accuracy, 0.8));
  EXPECT_FALSE(BeatsBest(accuracy, 0.9));
  EXPECT_FALSE(BeatsBest(accuracy, 0.85, 0.1));
  EXPECT_TRUE(BeatsBest(loss, 0.4));
  EXPECT_FALSE(BeatsBest(loss, 0.2));
  EXPECT_FALSE(BeatsBest(loss, 0.35, 0.1));
  EXPECT_FALSE(BeatsBest(Figure{"acc", none, true, true}, none));
}

}  // namespace
}  // namespace pipeline
