#ifndef PIPELINE_INTERFACES_METRIC_H_
#define PIPELINE_INTERFACES_METRIC_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/interfaces/metric_value.h"
#include "pipeline/registry/registry.h"
#include "torch/types.h"

namespace pipeline {

// A measure of predictions against labels over a whole pass (an epoch's
// training batches, or the validation set), built from sums so that passes
// split between ranks add up exactly: each rank adds its batches into its
// own sums, the trainer adds the sums across ranks, and Values() turns the
// totals into figures. A metric keeps no state itself; the sums live with
// the trainer (and in mid-epoch checkpoints).
class Metric {
 public:
  virtual ~Metric() = default;

  // How many sums this metric keeps.
  virtual int num_sums() const = 0;

  // Adds one batch into `sums` (num_sums() long). `logits` is N x classes
  // float on the CPU; `labels` is N class indices (int64). Batches trained
  // on soft targets (mixup) are not measured.
  virtual void Add(const torch::Tensor& logits, const torch::Tensor& labels,
                   std::vector<double>& sums) const = 0;

  // The figures for sums added over every rank's batches.
  virtual std::vector<MetricValue> Values(const std::vector<double>& sums) const = 0;

  // Whether a higher value of `name` (one of Values()' names) is better;
  // checkpoint.best_metric uses it.
  virtual bool HigherIsBetter(const std::string& name) const { return true; }

  // Values' names for the epoch line, in order; others go to the events,
  // metrics.jsonl and TensorBoard only (a per-class table would flood the
  // line). Default: all of them.
  virtual bool OnEpochLine(const std::string& name) const { return true; }
};

struct MetricContext {
  // The training data's class names, indexed by label.
  std::vector<std::string> class_names;
};

template <>
struct PluginKind<Metric> {
  static constexpr const char* kName = "metric";
  using Context = MetricContext;
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_METRIC_H_
