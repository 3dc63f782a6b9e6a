#include "pipeline/testing/metric_conformance.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/interfaces/metric.h"
#include "pipeline/interfaces/metric_value.h"
#include "pipeline/testing/conformance_config.h"
#include "torch/types.h"
#include "torch/utils.h"

namespace pipeline {
namespace testing {

void PrintTo(const MetricConformanceParams& params, std::ostream* out) {
  *out << "metric \"" << params.plugin << "\" with options {" << params.options << "}";
}

std::string MetricConformanceTestName(
    const ::testing::TestParamInfo<MetricConformanceParams>& info) {
  return ConformanceInstanceName(info.index);
}

namespace {

constexpr int64_t kClasses = 8;
// Uneven, one of a single sample: ranks and resumes split passes anywhere.
const std::vector<int64_t> kBatchSizes = {7, 1, 12, 5, 9, 16, 3, 8};
// Figures from sums added in another order differ in the last bits only.
constexpr double kTolerance = 1e-9;

struct LabeledBatch {
  torch::Tensor logits;  // N x kClasses float
  torch::Tensor labels;  // N int64
};

using Batches = std::vector<LabeledBatch>;

MetricContext Context() {
  MetricContext context;
  for (int64_t c = 0; c < kClasses; ++c) context.class_names.push_back(absl::StrCat("c", c));
  return context;
}

absl::StatusOr<std::unique_ptr<Metric>> Create(const MetricConformanceParams& params) {
  absl::StatusOr<PluginConfig> config = ConformanceConfig<Metric>(params.plugin, params.options);
  if (!config.ok()) return config.status();
  return Registry<Metric>::Global().Create(*config, Context());
}

// Random logits leaning towards the label, so that about half the samples
// are predicted right: figures far from 0 and 1 show more mistakes.
Batches RandomBatches(uint64_t seed) {
  torch::manual_seed(seed);
  Batches batches;
  for (int64_t size : kBatchSizes) {
    const torch::Tensor labels = torch::randint(kClasses, {size}, torch::kInt64);
    const torch::Tensor logits =
        torch::randn({size, kClasses}) + 1.5 * torch::one_hot(labels, kClasses).to(torch::kFloat);
    batches.push_back({logits, labels});
  }
  return batches;
}

// Batches of RandomBatches' sizes whose every prediction is right.
Batches PerfectBatches(uint64_t seed) {
  Batches batches = RandomBatches(seed);
  for (LabeledBatch& batch : batches) {
    batch.logits = 10 * torch::one_hot(batch.labels, kClasses).to(torch::kFloat) +
                   0.1 * torch::rand({batch.labels.size(0), kClasses});
  }
  return batches;
}

std::vector<double> EmptySums(const Metric& metric) {
  return std::vector<double>(metric.num_sums(), 0.0);
}

std::vector<double> AddAll(const Metric& metric, const Batches& batches, std::vector<double> sums) {
  for (const LabeledBatch& batch : batches) metric.Add(batch.logits, batch.labels, sums);
  return sums;
}

std::vector<double> AddAll(const Metric& metric, const Batches& batches) {
  return AddAll(metric, batches, EmptySums(metric));
}

std::string Describe(const std::vector<MetricValue>& figures) {
  return absl::StrJoin(figures, ", ", [](std::string* out, const MetricValue& figure) {
    absl::StrAppend(out, figure.name, "=", figure.value);
  });
}

// The same names in the same order, and values within kTolerance (NaN
// matching NaN: a figure is what it is on either side).
::testing::AssertionResult SameFigures(const std::vector<MetricValue>& actual,
                                       const std::vector<MetricValue>& expected) {
  bool same = actual.size() == expected.size();
  for (size_t i = 0; same && i < actual.size(); ++i) {
    const double a = actual[i].value, e = expected[i].value;
    same = actual[i].name == expected[i].name &&
           ((std::isnan(a) && std::isnan(e)) ||
            std::abs(a - e) <= kTolerance * std::max(1.0, std::abs(e)));
  }
  if (same) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got {" << Describe(actual) << "}, expected {" << Describe(expected) << "}";
}

std::vector<std::string> Names(const std::vector<MetricValue>& figures) {
  std::vector<std::string> names;
  for (const MetricValue& figure : figures) names.push_back(figure.name);
  return names;
}

// Whether `part` appears in `whole` in its order (other names between).
bool InOrderWithin(const std::vector<std::string>& part, const std::vector<std::string>& whole) {
  size_t next = 0;
  for (const std::string& name : whole) {
    if (next < part.size() && name == part[next]) ++next;
  }
  return next == part.size();
}

std::string ShapeOf(const torch::Tensor& tensor) {
  return absl::StrCat("[", absl::StrJoin(tensor.sizes(), ", "), "]");
}

#define CREATE_OR_RETURN(metric)                                         \
  absl::StatusOr<std::unique_ptr<Metric>> created_ = Create(GetParam()); \
  ASSERT_TRUE(created_.ok()) << created_.status();                       \
  const Metric& metric = **created_

TEST_P(MetricConformanceTest, FiguresAreFiniteAndNamedConsistently) {
  CREATE_OR_RETURN(metric);
  ASSERT_GT(metric.num_sums(), 0);
  const std::vector<std::string> announced = Names(metric.Values(EmptySums(metric)));
  const Batches batches = RandomBatches(1);
  for (size_t count : {size_t{1}, size_t{3}, batches.size()}) {
    const std::vector<double> sums =
        AddAll(metric, Batches(batches.begin(), batches.begin() + count));
    const std::vector<MetricValue> figures = metric.Values(sums);
    SCOPED_TRACE(absl::StrCat("after ", count, " batches: {", Describe(figures), "}"));
    EXPECT_FALSE(figures.empty());
    std::set<std::string> seen;
    for (const MetricValue& figure : figures) {
      EXPECT_FALSE(figure.name.empty()) << "a figure without a name";
      EXPECT_TRUE(seen.insert(figure.name).second) << "\"" << figure.name << "\" twice";
      EXPECT_TRUE(std::isfinite(figure.value)) << figure.name << " is " << figure.value;
    }
    EXPECT_TRUE(InOrderWithin(announced, Names(figures)))
        << "the names of a pass without samples, {" << absl::StrJoin(announced, ", ")
        << "}, are not all among these, in that order";
    EXPECT_TRUE(SameFigures(metric.Values(sums), figures)) << "the same sums, other figures";
  }
}

TEST_P(MetricConformanceTest, SumsAddUpAcrossRanks) {
  CREATE_OR_RETURN(metric);
  const Batches batches = RandomBatches(2);
  const std::vector<MetricValue> expected = metric.Values(AddAll(metric, batches));
  for (int ranks : {2, 3}) {
    std::vector<std::unique_ptr<Metric>> instances;
    std::vector<std::vector<double>> rank_sums;
    for (int r = 0; r < ranks; ++r) {
      absl::StatusOr<std::unique_ptr<Metric>> instance = Create(GetParam());
      ASSERT_TRUE(instance.ok()) << instance.status();
      rank_sums.push_back(EmptySums(**instance));
      instances.push_back(std::move(*instance));
    }
    // Batch b on rank b % ranks, as a distributed sampler deals them.
    for (size_t b = 0; b < batches.size(); ++b) {
      instances[b % ranks]->Add(batches[b].logits, batches[b].labels, rank_sums[b % ranks]);
    }
    std::vector<double> reduced = EmptySums(metric);
    for (const std::vector<double>& sums : rank_sums) {
      for (size_t i = 0; i < sums.size(); ++i) reduced[i] += sums[i];
    }
    // Every rank reports from the reduced sums.
    for (int r = 0; r < ranks; ++r) {
      EXPECT_TRUE(SameFigures(instances[r]->Values(reduced), expected))
          << "rank " << r << " of " << ranks
          << ": the all-reduced sums give other figures than one rank that saw every batch";
    }
  }
}

TEST_P(MetricConformanceTest, TheOrderOfBatchesAndSamplesDoesNotMatter) {
  const Batches batches = RandomBatches(3);
  Batches reversed(batches.rbegin(), batches.rend());
  Batches shuffled;
  for (const LabeledBatch& batch : batches) {
    const torch::Tensor order = torch::randperm(batch.labels.size(0), torch::kInt64);
    shuffled.push_back({batch.logits.index_select(0, order), batch.labels.index_select(0, order)});
  }
  CREATE_OR_RETURN(metric);
  const std::vector<MetricValue> expected = metric.Values(AddAll(metric, batches));
  const std::vector<std::pair<std::string, const Batches*>> orders = {
      {"the batches in reverse order", &reversed},
      {"the samples shuffled within each batch", &shuffled}};
  for (const auto& [what, reordered] : orders) {
    absl::StatusOr<std::unique_ptr<Metric>> fresh = Create(GetParam());
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    EXPECT_TRUE(SameFigures((*fresh)->Values(AddAll(**fresh, *reordered)), expected)) << what;
  }
}

TEST_P(MetricConformanceTest, APassFromEmptySumsStartsFromZero) {
  CREATE_OR_RETURN(used);
  absl::StatusOr<std::unique_ptr<Metric>> fresh = Create(GetParam());
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  // A pass of other figures first (every prediction right), then one of
  // as many samples from EmptySums, as the next epoch does.
  const std::vector<MetricValue> first = used.Values(AddAll(used, PerfectBatches(4)));
  const Batches second = RandomBatches(4);
  EXPECT_TRUE(
      SameFigures(used.Values(AddAll(used, second)), (*fresh)->Values(AddAll(**fresh, second))))
      << "a pass after another (whose figures were {" << Describe(first)
      << "}) differs from the same pass on a fresh instance";
  EXPECT_TRUE(SameFigures(used.Values(EmptySums(used)), (*fresh)->Values(EmptySums(**fresh))))
      << "empty sums after two passes";
}

TEST_P(MetricConformanceTest, SumsRestoredIntoAnotherInstanceContinueToTheSameFigures) {
  CREATE_OR_RETURN(metric);
  const Batches batches = RandomBatches(5);
  const std::vector<MetricValue> expected = metric.Values(AddAll(metric, batches));
  for (size_t done : {size_t{1}, batches.size() / 2, batches.size() - 1}) {
    absl::StatusOr<std::unique_ptr<Metric>> before = Create(GetParam());
    absl::StatusOr<std::unique_ptr<Metric>> after = Create(GetParam());
    ASSERT_TRUE(before.ok() && after.ok());
    // The checkpoint holds the sums as doubles; a copy is what comes back.
    const std::vector<double> saved =
        AddAll(**before, Batches(batches.begin(), batches.begin() + done));
    const std::vector<double> resumed =
        AddAll(**after, Batches(batches.begin() + done, batches.end()), saved);
    EXPECT_TRUE(SameFigures((*after)->Values(resumed), expected))
        << "resumed after " << done << " of " << batches.size() << " batches";
  }
}

TEST_P(MetricConformanceTest, APassWithoutSamplesGivesZerosNotNaN) {
  CREATE_OR_RETURN(metric);
  const std::vector<MetricValue> figures = metric.Values(EmptySums(metric));
  for (const MetricValue& figure : figures) {
    EXPECT_EQ(figure.value, 0) << figure.name << " of a pass without samples";
  }
  // A batch of no rows, into empty sums and into a pass's.
  const torch::Tensor logits = torch::zeros({0, kClasses});
  const torch::Tensor labels = torch::zeros({0}, torch::kInt64);
  for (std::vector<double> sums : {EmptySums(metric), AddAll(metric, RandomBatches(6))}) {
    const std::vector<double> before = sums;
    try {
      metric.Add(logits, labels, sums);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "Add of a batch of no rows threw: " << e.what();
    }
    EXPECT_EQ(sums, before) << "a batch of no rows changed the sums";
  }
}

TEST_P(MetricConformanceTest, LogitsAndLabelsThatDoNotFitAreErrors) {
  CREATE_OR_RETURN(metric);
  const torch::Tensor four = torch::randn({4, kClasses});
  const std::vector<std::pair<torch::Tensor, torch::Tensor>> misfits = {
      {four, torch::zeros({3}, torch::kInt64)},
      // Shapes that broadcast: counted, they would be another batch's.
      {four, torch::zeros({1}, torch::kInt64)},
      {torch::randn({1, kClasses}), torch::zeros({4}, torch::kInt64)},
      {four, torch::zeros({4, 1}, torch::kInt64)},
      {four.unsqueeze(2), torch::zeros({4}, torch::kInt64)},
      {torch::randn({kClasses}), torch::zeros({1}, torch::kInt64)},
  };
  const std::vector<double> pass = AddAll(metric, RandomBatches(7));
  for (const auto& [logits, labels] : misfits) {
    const std::string what =
        absl::StrCat("logits ", ShapeOf(logits), " with labels ", ShapeOf(labels));
    std::vector<double> sums = pass;
    bool refused = false;
    try {
      metric.Add(logits, labels, sums);
    } catch (const std::exception&) {
      refused = true;
    }
    EXPECT_TRUE(refused) << "Add took " << what;
    EXPECT_EQ(sums, pass) << "Add of " << what << " changed the sums";
  }
}

#undef CREATE_OR_RETURN

}  // namespace

// Plugins instantiate the suite from their own BUILD (conformance.bzl).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MetricConformanceTest);

}  // namespace testing
}  // namespace pipeline
