// metric `confusion_matrix`: how the predictions (argmax of the logits) of
// each true class are spread over the classes. Reports "mean_class_acc"
// (balanced accuracy: the mean recall of the classes that have samples) on
// the epoch line; "class_acc/<class>" (that recall) and every cell as
// "confusion/<true class>/<predicted class>" (a count) go to the events,
// metrics.jsonl and TensorBoard only.
//
//   metrics { name: "accuracy" }
//   metrics { name: "confusion_matrix" }

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/metric.h"
#include "plugins/metrics/confusion_matrix/confusion_matrix.pb.h"

namespace pipeline {
namespace {

constexpr char kMeanClassAccuracy[] = "mean_class_acc";

// sums: the C x C counts, row-major, row = true label, column = prediction.
class ConfusionMatrix : public Metric {
 public:
  explicit ConfusionMatrix(std::vector<std::string> class_names)
      : class_names_(std::move(class_names)) {}

  int num_sums() const override { return num_classes() * num_classes(); }

  void Add(const torch::Tensor& logits, const torch::Tensor& labels,
           std::vector<double>& sums) const override {
    // Labels of [1] broadcast against the predictions: they would be
    // counted, as some other batch.
    TORCH_CHECK(logits.dim() == 2 && labels.dim() == 1 && logits.size(0) == labels.size(0),
                "confusion_matrix: logits ", logits.sizes(), " and labels ", labels.sizes(),
                " do not fit; they are N x classes and N");
    // A prediction beyond the classes would land in the next label's row.
    TORCH_CHECK(logits.size(1) == num_classes(), "confusion_matrix: logits for ", logits.size(1),
                " classes, but the training data has ", num_classes());
    const torch::Tensor cells = labels * num_classes() + logits.argmax(1);
    const torch::Tensor counts = at::bincount(cells, {}, num_sums()).contiguous();
    // A label beyond the classes lands beyond the matrix.
    TORCH_CHECK(counts.numel() == num_sums(), "confusion_matrix: a label beyond the ",
                num_classes(), " classes");
    const int64_t* count = counts.data_ptr<int64_t>();
    for (int i = 0; i < num_sums(); ++i) sums[i] += count[i];
  }

  std::vector<MetricValue> Values(const std::vector<double>& sums) const override {
    std::vector<MetricValue> values = {{kMeanClassAccuracy, 0}};
    AddRecalls(sums, values);
    AddCells(sums, values);
    return values;
  }

  bool OnEpochLine(const std::string& name) const override { return name == kMeanClassAccuracy; }

 private:
  int num_classes() const { return class_names_.size(); }

  // Appends each class's recall and sets values[0], their mean. A class
  // without samples has no recall, and counting it as 0 would punish a
  // validation set for lacking it.
  void AddRecalls(const std::vector<double>& sums, std::vector<MetricValue>& values) const {
    int classes_with_samples = 0;
    for (int truth = 0; truth < num_classes(); ++truth) {
      const double* row = &sums[truth * num_classes()];
      double samples = 0;
      for (int predicted = 0; predicted < num_classes(); ++predicted) samples += row[predicted];
      if (samples == 0) continue;
      values.push_back({absl::StrCat("class_acc/", class_names_[truth]), row[truth] / samples});
      values[0].value += row[truth] / samples;
      ++classes_with_samples;
    }
    if (classes_with_samples > 0) values[0].value /= classes_with_samples;
  }

  void AddCells(const std::vector<double>& sums, std::vector<MetricValue>& values) const {
    for (int truth = 0; truth < num_classes(); ++truth) {
      for (int predicted = 0; predicted < num_classes(); ++predicted) {
        values.push_back(
            {absl::StrCat("confusion/", class_names_[truth], "/", class_names_[predicted]),
             sums[truth * num_classes() + predicted]});
      }
    }
  }

  std::vector<std::string> class_names_;
};

absl::StatusOr<std::unique_ptr<Metric>> CreateConfusionMatrix(const ConfusionMatrixOptions&,
                                                              const MetricContext& context) {
  if (context.class_names.empty()) {
    return absl::InvalidArgumentError("the training data has no classes");
  }
  return std::make_unique<ConfusionMatrix>(context.class_names);
}

PIPELINE_REGISTER_PLUGIN(Metric, "confusion_matrix", ConfusionMatrixOptions,
                         "Per-class accuracy, their mean and the confusion matrix",
                         CreateConfusionMatrix);

}  // namespace
}  // namespace pipeline
