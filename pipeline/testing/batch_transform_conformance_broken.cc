// Batch transforms that each break one rule of the batch transform
// conformance suite, instantiated with it: conformance_self_test checks that
// exactly the broken rules' tests fail.

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "google/protobuf/empty.pb.h"
#include "pipeline/interfaces/batch_transform.h"
#include "pipeline/interfaces/random.h"
#include "pipeline/testing/batch_transform_conformance.h"
#include "pipeline/util/status_macros.h"
#include "torch/types.h"

namespace pipeline {
namespace testing {
namespace {

using google::protobuf::Empty;

constexpr double kSmoothing = 0.1;

absl::Status CheckBatch(const torch::Tensor& images, const torch::Tensor& targets,
                        int64_t classes) {
  if (!images.defined() || images.dim() != 4 || images.scalar_type() != torch::kFloat ||
      !targets.defined()) {
    return absl::InvalidArgumentError("not a batch");
  }
  const int64_t count = images.size(0);
  if (targets.is_floating_point()) {
    if (targets.dim() == 2 && targets.size(0) == count && targets.size(1) == classes) {
      return absl::OkStatus();
    }
  } else if (targets.dim() == 1 && targets.size(0) == count &&
             (count == 0 ||
              (targets.min().item<int64_t>() >= 0 && targets.max().item<int64_t>() < classes))) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError("targets do not fit the images");
}

// The batch mixed with its mirror by a uniform lambda, labels smoothed by
// kSmoothing; the broken ones change one thing each.
class PlainMix : public BatchTransform {
 public:
  explicit PlainMix(int64_t classes) : classes_(classes) {}

  absl::Status Apply(torch::Tensor& images, torch::Tensor& targets,
                     SampleRandom& random) const override {
    if (ChecksInputs()) RETURN_IF_ERROR(CheckBatch(images, targets, classes_));
    const double lambda = Lambda(random);
    images = Finish(lambda * images + (1 - lambda) * images.flip(0));
    const torch::Tensor rows = Rows(targets);
    targets = lambda * rows + (1 - lambda) * Partners(rows);
    return absl::OkStatus();
  }

 protected:
  virtual bool ChecksInputs() const { return true; }
  virtual double Lambda(SampleRandom& random) const { return random.Uniform(); }
  virtual torch::Tensor Finish(const torch::Tensor& images) const { return images; }
  // The label's own share of the smoothing is added to its 1 - smoothing.
  virtual double LabelExtra() const { return kSmoothing / classes_; }
  virtual torch::Tensor Partners(const torch::Tensor& rows) const { return rows.flip(0); }

  torch::Tensor Rows(const torch::Tensor& targets) const {
    if (targets.is_floating_point()) return targets.to(torch::kFloat);
    return torch::full({targets.size(0), classes_}, kSmoothing / classes_, torch::kFloat)
        .scatter_(1, targets.view({-1, 1}).to(torch::kLong), 1 - kSmoothing + LabelExtra());
  }

  const int64_t classes_;
};

// Draws lambda from a count of its calls, not from the batch's stream: a
// resumed run mixes otherwise.
class GlobalCounter : public PlainMix {
 public:
  using PlainMix::PlainMix;

 protected:
  double Lambda(SampleRandom&) const override {
    static std::atomic<int> calls{0};
    return (calls++ % 9 + 1) / 10.0;
  }
};

// Forgets the label's own share of the smoothing: rows sum to
// 1 - smoothing / classes.
class TargetsShortOfOne : public PlainMix {
 public:
  using PlainMix::PlainMix;

 protected:
  double LabelExtra() const override { return 0; }
};

// Brightens the mixed images: values no input has.
class Brightens : public PlainMix {
 public:
  using PlainMix::PlainMix;

 protected:
  torch::Tensor Finish(const torch::Tensor& images) const override { return images + 1.5; }
};

// Mixes the targets with the previous image's rather than the mirror's.
class CreditsAnotherImage : public PlainMix {
 public:
  using PlainMix::PlainMix;

 protected:
  torch::Tensor Partners(const torch::Tensor& rows) const override { return rows.roll(1, 0); }
};

// Checks nothing: what does not fit is mixed anyway, or throws.
class TakesAnyShape : public PlainMix {
 public:
  using PlainMix::PlainMix;

 protected:
  bool ChecksInputs() const override { return false; }
};

template <typename T>
void RegisterBatchTransform(const char* name) {
  static const PluginRegistration<BatchTransform, Empty> registration(
      name, "broken on purpose",
      [](const Empty&,
         const BatchTransformContext& context) -> absl::StatusOr<std::unique_ptr<BatchTransform>> {
        return std::make_unique<T>(context.num_classes);
      });
}

const bool kRegistered = [] {
  RegisterBatchTransform<GlobalCounter>("broken_mix_global_counter");
  RegisterBatchTransform<TargetsShortOfOne>("broken_mix_targets_short_of_one");
  RegisterBatchTransform<Brightens>("broken_mix_brightens");
  RegisterBatchTransform<CreditsAnotherImage>("broken_mix_credits_another_image");
  RegisterBatchTransform<TakesAnyShape>("broken_mix_takes_any_shape");
  return true;
}();

#define BROKEN_BATCH_TRANSFORM(name)                                                      \
  INSTANTIATE_TEST_SUITE_P(name, BatchTransformConformanceTest,                           \
                           ::testing::Values(BatchTransformConformanceParams{#name, ""}), \
                           BatchTransformConformanceTestName)

BROKEN_BATCH_TRANSFORM(broken_mix_global_counter);
BROKEN_BATCH_TRANSFORM(broken_mix_targets_short_of_one);
BROKEN_BATCH_TRANSFORM(broken_mix_brightens);
BROKEN_BATCH_TRANSFORM(broken_mix_credits_another_image);
BROKEN_BATCH_TRANSFORM(broken_mix_takes_any_shape);

}  // namespace
}  // namespace testing
}  // namespace pipeline
