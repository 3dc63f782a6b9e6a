// Metrics that each break one rule of the metric conformance suite,
// instantiated with it: conformance_self_test checks that exactly the broken
// rules' tests fail.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "google/protobuf/empty.pb.h"
#include "pipeline/interfaces/metric.h"
#include "pipeline/testing/metric_conformance.h"
#include "torch/types.h"

namespace pipeline {
namespace testing {
namespace {

using google::protobuf::Empty;

void CheckFit(const torch::Tensor& logits, const torch::Tensor& labels) {
  TORCH_CHECK(logits.dim() == 2 && labels.dim() == 1 && logits.size(0) == labels.size(0), "logits ",
              logits.sizes(), " and labels ", labels.sizes(), " do not fit");
}

int64_t Correct(const torch::Tensor& logits, const torch::Tensor& labels) {
  return logits.argmax(1).eq(labels).sum().item<int64_t>();
}

// Top-1 accuracy over sums {correct, samples}; the broken ones change one
// thing each.
class Accuracy : public Metric {
 public:
  int num_sums() const override { return 2; }
  void Add(const torch::Tensor& logits, const torch::Tensor& labels,
           std::vector<double>& sums) const override {
    CheckFit(logits, labels);
    sums[0] += Correct(logits, labels);
    sums[1] += labels.size(0);
  }
  std::vector<MetricValue> Values(const std::vector<double>& sums) const override {
    return {{"acc", sums[1] > 0 ? sums[0] / sums[1] : 0.0}};
  }
};

// Keeps the pass's accuracy itself in its sums, updated as a running mean:
// right on one rank, but the all-reduce adds the ranks' means.
class MeanOfMeans : public Accuracy {
 public:
  void Add(const torch::Tensor& logits, const torch::Tensor& labels,
           std::vector<double>& sums) const override {
    CheckFit(logits, labels);
    const int64_t samples = labels.size(0);
    if (samples == 0) return;
    sums[0] = (sums[0] * sums[1] + Correct(logits, labels)) / (sums[1] + samples);
    sums[1] += samples;
  }
  std::vector<MetricValue> Values(const std::vector<double>& sums) const override {
    return {{"acc", sums[0]}};
  }
};

// Reports the best accuracy it has ever reported: a figure that a new pass
// does not reset.
class KeepsTheBest : public Accuracy {
 public:
  std::vector<MetricValue> Values(const std::vector<double>& sums) const override {
    best_ = std::max(best_, Accuracy::Values(sums)[0].value);
    return {{"acc", best_}};
  }

 private:
  mutable double best_ = -std::numeric_limits<double>::infinity();
};

// Its first Add sets the sums instead of adding to them, as if every
// instance began a pass: a resumed pass loses what came before.
class FirstAddOverwrites : public Accuracy {
 public:
  void Add(const torch::Tensor& logits, const torch::Tensor& labels,
           std::vector<double>& sums) const override {
    if (first_) std::fill(sums.begin(), sums.end(), 0.0);
    first_ = false;
    Accuracy::Add(logits, labels, sums);
  }

 private:
  mutable bool first_ = true;
};

// Divides by the samples without asking whether there were any.
class NanWhenEmpty : public Accuracy {
 public:
  std::vector<MetricValue> Values(const std::vector<double>& sums) const override {
    return {{"acc", sums[0] / sums[1]}};
  }
};

// Measures only the first 4 samples of each batch, to save time: the figure
// depends on which samples come first.
class FirstRowsOnly : public Accuracy {
 public:
  void Add(const torch::Tensor& logits, const torch::Tensor& labels,
           std::vector<double>& sums) const override {
    CheckFit(logits, labels);
    Accuracy::Add(logits.slice(0, 0, 4), labels.slice(0, 0, 4), sums);
  }
};

// Checks no shapes: labels that broadcast against the predictions are
// counted as if they were the batch's.
class Broadcasts : public Accuracy {
 public:
  void Add(const torch::Tensor& logits, const torch::Tensor& labels,
           std::vector<double>& sums) const override {
    sums[0] += Correct(logits, labels);
    sums[1] += labels.size(0);
  }
};

template <typename T>
void RegisterMetric(const char* name) {
  static const PluginRegistration<Metric, Empty> registration(
      name, "broken on purpose",
      [](const Empty&, const MetricContext&) -> absl::StatusOr<std::unique_ptr<Metric>> {
        return std::make_unique<T>();
      });
}

const bool kRegistered = [] {
  RegisterMetric<MeanOfMeans>("broken_metric_mean_of_means");
  RegisterMetric<KeepsTheBest>("broken_metric_keeps_the_best");
  RegisterMetric<FirstAddOverwrites>("broken_metric_first_add_overwrites");
  RegisterMetric<NanWhenEmpty>("broken_metric_nan_when_empty");
  RegisterMetric<FirstRowsOnly>("broken_metric_first_rows_only");
  RegisterMetric<Broadcasts>("broken_metric_broadcasts");
  return true;
}();

#define BROKEN_METRIC(name)                                                       \
  INSTANTIATE_TEST_SUITE_P(name, MetricConformanceTest,                           \
                           ::testing::Values(MetricConformanceParams{#name, ""}), \
                           MetricConformanceTestName)

BROKEN_METRIC(broken_metric_mean_of_means);
BROKEN_METRIC(broken_metric_keeps_the_best);
BROKEN_METRIC(broken_metric_first_add_overwrites);
BROKEN_METRIC(broken_metric_nan_when_empty);
BROKEN_METRIC(broken_metric_first_rows_only);
BROKEN_METRIC(broken_metric_broadcasts);

}  // namespace
}  // namespace testing
}  // namespace pipeline
