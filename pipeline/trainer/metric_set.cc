#include "pipeline/trainer/metric_set.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace pipeline {

bool BeatsBest(const Figure& figure, double best, double min_delta) {
  if (std::isnan(figure.value)) return false;
  if (std::isnan(best)) return true;
  return figure.higher_is_better ? figure.value > best + min_delta
                                 : figure.value < best - min_delta;
}

absl::StatusOr<MetricSet> MetricSet::Create(const PipelineConfig& config,
                                            const std::vector<std::string>& classes) {
  MetricSet set;
  for (int i = 0; i < config.metrics_size(); ++i) {
    auto metric = Registry<Metric>::Global().Create(config.metrics(i), MetricContext{classes});
    if (!metric.ok()) {
      return absl::Status(metric.status().code(), absl::StrCat("metrics[", i, "]: ",
                                                               metric.status().message()));
    }
    set.offsets_.push_back(set.num_sums_);
    set.num_sums_ += (*metric)->num_sums();
    set.metrics_.push_back(std::move(*metric));
  }
  return set;
}

void MetricSet::Add(const torch::Tensor& logits, const torch::Tensor& labels, double loss_sum,
                    std::vector<double>& sums) const {
  sums[0] += loss_sum;
  sums[1] += static_cast<double>(labels.size(0));
  for (size_t m = 0; m < metrics_.size(); ++m) {
    std::vector<double> own(sums.begin() + offsets_[m],
                            sums.begin() + offsets_[m] + metrics_[m]->num_sums());
    metrics_[m]->Add(logits, labels, own);
    std::copy(own.begin(), own.end(), sums.begin() + offsets_[m]);
  }
}

std::vector<Figure> MetricSet::Values(const std::vector<double>& sums) const {
  std::vector<Figure> figures = {{"loss", sums[1] > 0 ? sums[0] / sums[1] : 0.0, true, false}};
  for (size_t m = 0; m < metrics_.size(); ++m) {
    const Metric& metric = *metrics_[m];
    const std::vector<double> own(sums.begin() + offsets_[m],
                                  sums.begin() + offsets_[m] + metric.num_sums());
    for (const MetricValue& value : metric.Values(own)) {
      figures.push_back({value.name, value.value, metric.OnEpochLine(value.name),
                         metric.HigherIsBetter(value.name)});
    }
  }
  return figures;
}

std::vector<std::string> MetricSet::Names() const {
  std::vector<std::string> names;
  for (const Figure& figure : Values(EmptySums())) names.push_back(figure.name);
  return names;
}

}  // namespace pipeline
