#ifndef PIPELINE_INTERFACES_METRIC_VALUE_H_
#define PIPELINE_INTERFACES_METRIC_VALUE_H_

#include <string>

namespace pipeline {

// One named figure ("acc", "acc_top5", "class_acc/cat"; in a run's summary
// "train_loss", "val_acc", ...): what a metric reports and what a run
// returns, without LibTorch.
struct MetricValue {
  std::string name;
  double value = 0;
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_METRIC_VALUE_H_
