// metric `accuracy`: top-k accuracy, reported as "acc" (k = 1) or
// "acc_top<k>". The default metric.
//
//   metrics { name: "accuracy" }
//   metrics {
//     name: "accuracy"
//     options { [type.googleapis.com/pipeline.AccuracyOptions] { top_k: 5 } }
//   }

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/interfaces/metric.h"
#include "plugins/metrics/accuracy/accuracy.pb.h"

namespace pipeline {
namespace {

// sums: {samples whose label is in the top k, samples}.
class Accuracy : public Metric {
 public:
  explicit Accuracy(int top_k) : top_k_(top_k) {}

  int num_sums() const override { return 2; }

  void Add(const torch::Tensor& logits, const torch::Tensor& labels,
           std::vector<double>& sums) const override {
    // Labels of [1] or [N, 1] broadcast against the predictions: they would
    // be counted, as some other batch.
    TORCH_CHECK(logits.dim() == 2 && labels.dim() == 1 && logits.size(0) == labels.size(0),
                "accuracy: logits ", logits.sizes(), " and labels ", labels.sizes(),
                " do not fit; they are N x classes and N");
    sums[0] += CountCorrect(logits, labels);
    sums[1] += labels.size(0);
  }

  std::vector<MetricValue> Values(const std::vector<double>& sums) const override {
    const std::string name = top_k_ == 1 ? "acc" : absl::StrCat("acc_top", top_k_);
    return {{name, sums[1] > 0 ? sums[0] / sums[1] : 0.0}};
  }

 private:
  int64_t CountCorrect(const torch::Tensor& logits, const torch::Tensor& labels) const {
    // argmax, not topk(1): its choice among tied logits is what the trainer
    // counted before, so top-1 figures of old and new runs agree exactly.
    if (top_k_ == 1) return logits.argmax(1).eq(labels).sum().item<int64_t>();
    const torch::Tensor top = std::get<1>(logits.topk(top_k_, 1));
    return top.eq(labels.unsqueeze(1)).any(1).sum().item<int64_t>();
  }

  int top_k_;
};

absl::Status ValidateAccuracy(const AccuracyOptions& options) {
  if (options.top_k() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("top_k: ", options.top_k(), "; must be at least 1"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Metric>> CreateAccuracy(const AccuracyOptions& options,
                                                       const MetricContext& context) {
  const int64_t num_classes = context.class_names.size();
  if (options.top_k() > num_classes) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.top_k: ", options.top_k(), ", but the training data has ",
                     num_classes, " classes; top_k must be at most the number of classes"));
  }
  return std::make_unique<Accuracy>(options.top_k());
}

PIPELINE_REGISTER_PLUGIN(Metric, "accuracy", AccuracyOptions,
                         "Share of samples whose label is among the top_k logits", CreateAccuracy,
                         ValidateAccuracy);
PIPELINE_DEFAULT_PLUGIN(Metric, "metrics", "accuracy");

}  // namespace
}  // namespace pipeline
