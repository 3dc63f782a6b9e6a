#ifndef PIPELINE_TRAINER_METRIC_SET_H_
#define PIPELINE_TRAINER_METRIC_SET_H_

// The figures of one pass over data (an epoch's training batches, a log
// window, a validation pass): the loss and every configured metric, kept as
// one vector of sums so that a pass split between ranks adds up with one
// all-reduce and a mid-epoch checkpoint holds it whole.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pipeline/config/pipeline.pb.h"
#include "pipeline/interfaces/metric.h"
#include "torch/types.h"

namespace pipeline {

// One value of a pass, with what its metric says of it.
struct Figure {
  std::string name;  // "loss", "acc", "acc_top5", "class_acc/cat", ...
  double value = 0;
  bool on_epoch_line = true;
  bool higher_is_better = true;
};

// Whether `figure` beats `best` (NaN: none yet) by more than `min_delta`
// in its own direction; a NaN figure never does.
bool BeatsBest(const Figure& figure, double best, double min_delta = 0);

class MetricSet {
 public:
  // The metric plugins of config.metrics, for data with `classes`. A metric
  // that does not fit the data (top-5 of 2 classes) is an error naming its
  // field ("metrics[0].options.top_k: ...").
  static absl::StatusOr<MetricSet> Create(const PipelineConfig& config,
                                          const std::vector<std::string>& classes);

  // Sums of a pass: the loss times samples, the samples, then each metric's.
  std::vector<double> EmptySums() const { return std::vector<double>(num_sums_, 0.0); }

  // Adds a batch of `labels.size(0)` samples whose summed loss is
  // `loss_sum`; `logits` N x classes float on the CPU.
  void Add(const torch::Tensor& logits, const torch::Tensor& labels, double loss_sum,
           std::vector<double>& sums) const;

  // "loss", then every metric's values, for sums over a whole pass (all 0
  // for a pass without samples).
  std::vector<Figure> Values(const std::vector<double>& sums) const;

  static double Samples(const std::vector<double>& sums) { return sums[1]; }

  // The names Values gives for a pass without samples, "loss" first (a
  // per-class metric names more once classes have samples).
  std::vector<std::string> Names() const;

 private:
  MetricSet() = default;

  std::vector<std::shared_ptr<const Metric>> metrics_;
  std::vector<int> offsets_;  // of each metric's sums
  int num_sums_ = 2;
};

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_METRIC_SET_H_
