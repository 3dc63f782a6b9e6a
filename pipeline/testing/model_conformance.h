#ifndef PIPELINE_TESTING_MODEL_CONFORMANCE_H_
#define PIPELINE_TESTING_MODEL_CONFORMANCE_H_

// What every model plugin must do, built through the registry with a
// ModelContext as BuildModel builds it (pipeline/weights/build_model.h), on
// random image_size x image_size images (small, so the suite stays quick):
//
//  - a batch of N images gives N x num_classes finite float logits: N = 1
//    and 3 in eval mode, for a model of 3 input channels and 10 classes and
//    one of 1 and 2, and N = 3 in training (a batch of one cannot train a
//    BatchNorm that sees 1x1 maps, in PyTorch neither);
//  - in eval mode the same batch twice gives bitwise the same logits;
//  - in eval mode an image's logits do not depend on the other images of
//    its batch (BatchNorm normalises with its running statistics), to float
//    tolerance (1e-4 of the largest logit);
//  - in training, backward from the sum of the logits (and of the
//    auxiliary classifiers' logits, Model::auxiliary_logits, as the
//    training loss adds them) gives every parameter that requires grad a
//    defined, finite gradient: no parameter is left out of the forward pass
//    (the optimizer and the strategies' gradient all-reduce expect one for
//    each);
//  - head_prefixes() is not empty, each prefix names at least one
//    parameter, and the head holds exactly the parameters, and the
//    buffers, whose shape follows num_classes (compared between 2 and 10
//    classes): what pretrained weights for another class count leave fresh
//    and what freeze_backbone keeps trainable;
//  - two constructions give the same parameter and buffer names in the same
//    order (checkpoints, optimizer state and replicas go by them);
//  - the same seed (torch::manual_seed) gives bitwise the same initial
//    parameters and buffers: runs are reproducible;
//  - the parameters, buffers and input moved to channels_last memory format
//    (trainer.memory_format: CHANNELS_LAST) give the same logits, to float
//    tolerance;
//  - an input with the wrong number of channels is an exception that
//    CallTorch, as the strategies call the model, turns into an error
//    status: not logits, not a crash.
//  - built through BuildModel as a config with model.weights and
//    model.freeze_backbone builds it, exactly the parameters under
//    head_prefixes() still require grad;
//  - in training, a few SGD steps (the training loss: cross entropy on a
//    random batch, plus the auxiliary classifiers' weighted losses) move
//    every parameter that requires grad, or give it a nonzero gradient (a
//    step too small for float32 to change a weight near 1, as ConvNeXt's
//    LayerNorms behind a layer scale of 1e-6 get, still shows it takes
//    part). A few, not one: a layer that starts at zero (torchvision's ViT
//    head, zero_init_residual's last BatchNorm of each block) leaves the
//    layers before it a zero gradient in the first step, as in PyTorch;
//  - a floating-point option named `dropout`, `*_dropout` or `*_prob` is a
//    probability: validating the config (before anything is built) accepts
//    0 and 1 and refuses -0.1 and 1.5 with InvalidArgument, naming the
//    field;
//  - for an instance that names its torchvision.models constructor
//    (`torchvision`), at torchvision's 1000 classes and 3 channels: the
//    state_dict has torchvision's keys, order and shapes, and the
//    parameter count torchvision's, against
//    <plugin package>/testdata/torchvision_<name>_state_dict.txt
//    (tools/fixtures/torchvision_state_dict_keys.py); and where
//    torchvision_<name>_parity_logits.txt is there too, eval-mode logits
//    for the deterministic weights and input of parity_fixture.h (2 images
//    of 3x64x64, 10 classes: tools/fixtures/torchvision_parity_logits.py)
//    equal torchvision's to 2e-5 of the largest logit. Variants too large
//    to run in CI are declared for the state_dict check alone
//    (`torchvision_state_dict_only`) and skip every other test.
//
// Tests that only look at a model or run it in eval mode share one
// construction per instance: constructing the largest models takes longer
// than everything else the suite does.
//
// A plugin gets the suite with one line in its BUILD:
//
//   load("//pipeline/testing:conformance.bzl", "model_conformance_test")
//   model_conformance_test(
//       name = "conformance_test",
//       plugin = ":resnet",
//       options = ["depth: 18", "depth: 50", "depth: 18 stem: CIFAR"],  # or one string
//       image_size = 16,  # the default is 32
//       # One torchvision.models constructor per options entry ("": none).
//       torchvision = ["resnet18", "resnet50", ""],
//       torchvision_state_dict_only = {"depth: 34": "resnet34", "depth: 101": "resnet101"},
//   )
//
// A torchvision name is a constructor's, followed by `_<arg>_<value>` for
// each keyword argument as the fixture scripts name their files
// ("mobilenet_v2_width_mult_0.5" for mobilenet_v2(width_mult=0.5)).

#include <cstdint>
#include <ostream>
#include <string>

#include "gtest/gtest.h"

namespace pipeline {
namespace testing {

struct ModelConformanceParams {
  std::string plugin;   // its registered name
  std::string options;  // the body of its options message, text format
  // Height and width of the test images: as small as the model takes.
  int64_t image_size = 32;
  // The torchvision.models constructor these options build, "" for none.
  std::string torchvision;
  // Its fixtures' folder, relative to the runfiles root (the plugin
  // package's testdata).
  std::string testdata;
  // Whether <testdata>/torchvision_<torchvision>_parity_logits.txt exists.
  bool parity = false;
  // Only the torchvision state_dict check: a variant too large to run here.
  bool state_dict_only = false;
};

void PrintTo(const ModelConformanceParams& params, std::ostream* out);

class ModelConformanceTest : public ::testing::TestWithParam<ModelConformanceParams> {};

std::string ModelConformanceTestName(const ::testing::TestParamInfo<ModelConformanceParams>& info);

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_MODEL_CONFORMANCE_H_
