#include "plugins/batch_transforms/mixup/mix.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "torch/csrc/autograd/grad_mode.h"

namespace pipeline {
namespace {

constexpr double kPi = 3.14159265358979323846;

double StandardNormal(SampleRandom& random) {
  // Box-Muller; 1 - U keeps the logarithm finite.
  const double u = 1.0 - random.Uniform();
  const double v = random.Uniform();
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * kPi * v);
}

// Gamma(shape, 1): Marsaglia and Tsang for shape >= 1, boosted below it.
double SampleGamma(double shape, SampleRandom& random) {
  if (shape < 1.0) {
    const double u = 1.0 - random.Uniform();
    return SampleGamma(shape + 1.0, random) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x, v;
    do {
      x = StandardNormal(random);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = 1.0 - random.Uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

std::string ShapeOf(const torch::Tensor& tensor) {
  return absl::StrCat("[", absl::StrJoin(tensor.sizes(), ", "), "]");
}

// What Apply is given, as batch_transform.h has it: an error rather than a
// LibTorch exception (a label beyond the classes) or a batch mixed along
// the wrong dimension (images without one for the batch).
absl::Status CheckBatch(const torch::Tensor& images, const torch::Tensor& targets,
                        int64_t classes) {
  if (!images.defined() || images.dim() != 4 || images.scalar_type() != torch::kFloat) {
    return absl::InvalidArgumentError(absl::StrCat(
        "images ", images.defined() ? ShapeOf(images) : "undefined", " (",
        images.defined() ? c10::toString(images.scalar_type()) : "none",
        "): a batch is N x C x H x W float32"));
  }
  const int64_t count = images.size(0);
  if (!targets.defined()) return absl::InvalidArgumentError("a batch without targets");
  if (targets.is_floating_point()) {
    if (targets.dim() == 2 && targets.size(0) == count && targets.size(1) == classes) {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(absl::StrCat("soft targets ", ShapeOf(targets), " for ",
                                                    count, " images of ", classes,
                                                    " classes; they are N x classes"));
  }
  if (targets.dim() != 1 || targets.size(0) != count) {
    return absl::InvalidArgumentError(absl::StrCat("labels ", ShapeOf(targets), " for ", count,
                                                   " images; they are N class indices"));
  }
  if (count > 0) {
    const int64_t low = targets.min().item<int64_t>(), high = targets.max().item<int64_t>();
    if (low < 0 || high >= classes) {
      return absl::InvalidArgumentError(absl::StrCat("label ", low < 0 ? low : high,
                                                     " is not one of the ", classes, " classes"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

double SampleBeta(double alpha, SampleRandom& random) {
  const double x = SampleGamma(alpha, random);
  const double y = SampleGamma(alpha, random);
  return x / (x + y);
}

torch::Tensor MixTargets(const torch::Tensor& targets, int64_t classes, double lam,
                         double label_smoothing) {
  torch::Tensor rows;
  if (targets.is_floating_point()) {
    rows = targets.to(torch::kFloat);
  } else {
    const double off = label_smoothing / static_cast<double>(classes);
    const double on = 1.0 - label_smoothing + off;
    rows = torch::full({targets.size(0), classes}, off, torch::kFloat)
               .scatter_(1, targets.view({-1, 1}).to(torch::kLong), on);
  }
  return rows * lam + rows.flip(0) * (1.0 - lam);
}

void MixupImages(torch::Tensor& images, double lam) {
  torch::NoGradGuard no_grad;
  const torch::Tensor flipped = images.flip(0).mul_(1.0 - lam);
  images.mul_(lam).add_(flipped);
}

Box CutmixBox(int64_t height, int64_t width, double lam, SampleRandom& random) {
  const double ratio = std::sqrt(1.0 - lam);
  const int64_t cut_h = static_cast<int64_t>(height * ratio);
  const int64_t cut_w = static_cast<int64_t>(width * ratio);
  const int64_t cy = static_cast<int64_t>(random.Below(height));
  const int64_t cx = static_cast<int64_t>(random.Below(width));
  auto clip = [](int64_t value, int64_t limit) { return std::clamp<int64_t>(value, 0, limit); };
  return {clip(cy - cut_h / 2, height), clip(cy + cut_h / 2, height), clip(cx - cut_w / 2, width),
          clip(cx + cut_w / 2, width)};
}

void CutmixImages(torch::Tensor& images, const Box& box) {
  torch::NoGradGuard no_grad;
  using torch::indexing::Slice;
  const auto rows = Slice(box.y0, box.y1), columns = Slice(box.x0, box.x1);
  const torch::Tensor pasted = images.flip(0).index({Slice(), Slice(), rows, columns});
  images.index_put_({Slice(), Slice(), rows, columns}, pasted);
}

absl::Status ApplyMix(const MixSettings& settings, int64_t classes, torch::Tensor& images,
                      torch::Tensor& targets, SampleRandom& random) {
  if (absl::Status fits = CheckBatch(images, targets, classes); !fits.ok()) return fits;
  double lam = 1.0;
  bool cutmix = false;
  if (random.Uniform() < settings.prob) {
    if (settings.mixup_alpha > 0 && settings.cutmix_alpha > 0) {
      cutmix = random.Uniform() < settings.switch_prob;
      lam = SampleBeta(cutmix ? settings.cutmix_alpha : settings.mixup_alpha, random);
    } else if (settings.mixup_alpha > 0) {
      lam = SampleBeta(settings.mixup_alpha, random);
    } else {
      cutmix = true;
      lam = SampleBeta(settings.cutmix_alpha, random);
    }
  }
  if (lam != 1.0 && cutmix) {
    const int64_t height = images.size(2), width = images.size(3);
    const Box box = CutmixBox(height, width, lam, random);
    CutmixImages(images, box);
    if (settings.correct_lam) {
      lam = 1.0 - static_cast<double>((box.y1 - box.y0) * (box.x1 - box.x0)) /
                      static_cast<double>(height * width);
    }
  } else if (lam != 1.0) {
    MixupImages(images, lam);
  }
  targets = MixTargets(targets, classes, lam, settings.label_smoothing);
  return absl::OkStatus();
}

absl::Status ValidateMixSettings(const MixSettings& settings, int64_t classes,
                                 const char* alpha_field) {
  auto fail = [](const char* field, double value, const char* range) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", value, "; must be ", range));
  };
  if (settings.mixup_alpha < 0) return fail(alpha_field, settings.mixup_alpha, ">= 0");
  if (settings.cutmix_alpha < 0) return fail("cutmix_alpha", settings.cutmix_alpha, ">= 0");
  if (!(settings.prob >= 0 && settings.prob <= 1)) return fail("prob", settings.prob, "in [0, 1]");
  if (!(settings.switch_prob >= 0 && settings.switch_prob <= 1)) {
    return fail("switch_prob", settings.switch_prob, "in [0, 1]");
  }
  if (!(settings.label_smoothing >= 0 && settings.label_smoothing < 1)) {
    return fail("label_smoothing", settings.label_smoothing, "in [0, 1)");
  }
  if (settings.mixup_alpha == 0 && settings.cutmix_alpha == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(alpha_field, ": 0 mixes nothing; give it a value > 0 (timm: 0.8 for "
                                  "mixup, 1.0 for cutmix) or remove the batch transform"));
  }
  if (classes < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mixing needs at least 2 classes, and the training data has ", classes));
  }
  return absl::OkStatus();
}

}  // namespace pipeline
