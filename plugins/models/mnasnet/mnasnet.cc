// model `mnasnet`: torchvision's MNASNet (B1 of the MnasNet paper: inverted
// residual blocks with ReLU, no squeeze-and-excitation), in torchvision's
// version 2 layout (the stem scales with alpha too). Submodules carry
// torchvision's attribute names and registration order, and the
// parameter-free layers torchvision keeps in its Sequentials (ReLU,
// Dropout) hold their index here too, so named_parameters() and
// named_buffers() give exactly the keys and shapes of torchvision's
// state_dict() and checkpoints can be exchanged with
// torchvision.models.mnasnet<alpha>; the test checks this against fixtures
// written by tools/fixtures/torchvision_state_dict_keys.py, and checks the
// logits against torchvision's for the same weights. Initialisation and
// BatchNorm momentum are torchvision's too.
//
//   model {
//     name: "mnasnet"
//     options { [type.googleapis.com/pipeline.MnasNetOptions] { variant: MNASNET0_5 } }
//   }

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/layers/batch_norm.h"
#include "plugins/models/common/dropout.h"
#include "plugins/models/mnasnet/mnasnet.pb.h"
#include "torch/nn/init.h"
#include "torch/nn/modules/activation.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/conv.h"
#include "torch/nn/modules/dropout.h"
#include "torch/nn/modules/linear.h"

namespace pipeline {
namespace {

struct Width {
  MnasNetOptions::Variant variant;
  double alpha;
};

constexpr Width kWidths[] = {
    {MnasNetOptions::MNASNET0_5, 0.5},
    {MnasNetOptions::MNASNET0_75, 0.75},
    {MnasNetOptions::MNASNET1_0, 1.0},
    {MnasNetOptions::MNASNET1_3, 1.3},
};

const Width* FindWidth(MnasNetOptions::Variant variant) {
  for (const Width& width : kWidths) {
    if (width.variant == variant) return &width;
  }
  return nullptr;
}

// torchvision's _BN_MOMENTUM: the TensorFlow original's decay of 0.9997,
// in torch's convention (the weight of the new batch's statistics).
constexpr double kBatchNormMomentum = 1 - 0.9997;

BatchNorm2d Norm(int64_t channels) {
  return BatchNorm2d(torch::nn::BatchNormOptions(channels).momentum(kBatchNormMomentum));
}

torch::nn::Conv2d Conv(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                       int64_t stride = 1, int64_t groups = 1) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, out_channels, kernel_size)
                               .stride(stride)
                               .padding(kernel_size / 2)
                               .groups(groups)
                               .bias(false));
}

// torchvision's _round_to_multiple_of with divisor 8 and round_up_bias
// 0.9: the nearest multiple of 8 (at least 8), one step up where that would
// be more than 10% below `value`.
int64_t RoundToMultipleOf8(double value) {
  const int64_t rounded = std::max<int64_t>(8, static_cast<int64_t>(value + 4) / 8 * 8);
  return rounded >= 0.9 * value ? rounded : rounded + 8;
}

// torchvision's _InvertedResidual: a 1x1 expansion, a depthwise conv and a
// linear 1x1 projection in `layers`, the input added back where the shape
// allows.
class InvertedResidualImpl : public torch::nn::Module {
 public:
  InvertedResidualImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                       int64_t stride, int64_t expansion)
      : residual_(in_channels == out_channels && stride == 1) {
    const int64_t mid = in_channels * expansion;
    layers_ = register_module(
        "layers",
        torch::nn::Sequential(Conv(in_channels, mid, 1), Norm(mid), torch::nn::ReLU(),
                              Conv(mid, mid, kernel_size, stride, mid), Norm(mid),
                              torch::nn::ReLU(), Conv(mid, out_channels, 1), Norm(out_channels)));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    return residual_ ? layers_->forward(x) + x : layers_->forward(x);
  }

 private:
  bool residual_;
  torch::nn::Sequential layers_{nullptr};
};
TORCH_MODULE(InvertedResidual);

// torchvision's _stack: an nn.Sequential of blocks, children "0", "1", ...
// (a LibTorch Sequential cannot hold another).
class StackImpl : public torch::nn::Module {
 public:
  StackImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride,
            int64_t expansion, int64_t repeats) {
    for (int64_t i = 0; i < repeats; ++i) {
      blocks_.push_back(register_module(
          std::to_string(i), InvertedResidual(i == 0 ? in_channels : out_channels, out_channels,
                                              kernel_size, i == 0 ? stride : 1, expansion)));
    }
  }

  torch::Tensor forward(torch::Tensor x) {
    for (InvertedResidual& block : blocks_) x = block->forward(x);
    return x;
  }

 private:
  std::vector<InvertedResidual> blocks_;
};
TORCH_MODULE(Stack);

// One _stack of torchvision's MNASNet: kernel, first stride, expansion,
// repeats; its channels are depths[i + 1] -> depths[i + 2].
struct StackConfig {
  int64_t kernel_size;
  int64_t stride;
  int64_t expansion;
  int64_t repeats;
};

constexpr StackConfig kStacks[] = {{3, 2, 3, 3}, {5, 2, 3, 3}, {5, 2, 6, 3},
                                   {3, 1, 6, 2}, {5, 2, 6, 4}, {3, 1, 6, 1}};

constexpr int64_t kBaseDepths[] = {32, 16, 24, 40, 80, 96, 192, 320};

class MnasNet : public Model {
 public:
  MnasNet(double alpha, int64_t num_classes, int64_t in_channels, double dropout) {
    std::vector<int64_t> depths;
    for (int64_t depth : kBaseDepths) depths.push_back(RoundToMultipleOf8(depth * alpha));
    torch::nn::Sequential layers(Conv(in_channels, depths[0], 3, 2), Norm(depths[0]),
                                 torch::nn::ReLU(), Conv(depths[0], depths[0], 3, 1, depths[0]),
                                 Norm(depths[0]), torch::nn::ReLU(), Conv(depths[0], depths[1], 1),
                                 Norm(depths[1]));
    for (size_t i = 0; i < std::size(kStacks); ++i) {
      const StackConfig& stack = kStacks[i];
      layers->push_back(Stack(depths[i + 1], depths[i + 2], stack.kernel_size, stack.stride,
                              stack.expansion, stack.repeats));
    }
    layers->push_back(Conv(depths.back(), kLastChannels, 1));
    layers->push_back(Norm(kLastChannels));
    layers->push_back(torch::nn::ReLU());
    layers_ = register_module("layers", layers);
    classifier_ = register_module(
        "classifier", torch::nn::Sequential(torch::nn::Dropout(torch::nn::DropoutOptions(dropout)),
                                            torch::nn::Linear(kLastChannels, num_classes)));
    InitialiseLikeTorchvision();
  }

  torch::Tensor forward(const torch::Tensor& images) override {
    return classifier_->forward(layers_->forward(images).mean({2, 3}));
  }

  std::vector<std::string> head_prefixes() const override { return {"classifier.1."}; }

 private:
  static constexpr int64_t kLastChannels = 1280;

  // Kaiming-normal (fan out, ReLU) convolutions; the classifier Kaiming
  // uniform (fan out, sigmoid's gain of 1) with a zero bias. LibTorch's
  // BatchNorm2d already starts at weight 1, bias 0.
  void InitialiseLikeTorchvision() {
    for (const auto& module : modules(/*include_self=*/false)) {
      if (auto* conv = module->as<torch::nn::Conv2d>()) {
        torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0, torch::kFanOut, torch::kReLU);
      } else if (auto* linear = module->as<torch::nn::Linear>()) {
        torch::nn::init::kaiming_uniform_(linear->weight, /*a=*/0, torch::kFanOut, torch::kSigmoid);
        torch::nn::init::zeros_(linear->bias);
      }
    }
  }

  torch::nn::Sequential layers_{nullptr};
  torch::nn::Sequential classifier_{nullptr};
};

absl::Status ValidateMnasNetOptions(const MnasNetOptions& options) {
  if (FindWidth(options.variant()) == nullptr) {
    std::vector<std::string> variants;
    for (const Width& width : kWidths) {
      variants.push_back(MnasNetOptions::Variant_Name(width.variant));
    }
    return absl::InvalidArgumentError(absl::StrCat("variant: ", options.variant(),
                                                   " is not an MNASNet width; choose one of ",
                                                   absl::StrJoin(variants, ", ")));
  }
  return ValidateDropout(options.dropout());
}

absl::StatusOr<std::unique_ptr<Model>> CreateMnasNet(const MnasNetOptions& options,
                                                     const ModelContext& context) {
  return std::make_unique<MnasNet>(FindWidth(options.variant())->alpha, context.num_classes,
                                   context.input_channels, options.dropout());
}

PIPELINE_REGISTER_PLUGIN(Model, "mnasnet", MnasNetOptions,
                         "MNASNet (alpha 0.5 to 1.3) with torchvision's state_dict keys and init",
                         CreateMnasNet, ValidateMnasNetOptions);

}  // namespace
}  // namespace pipeline
