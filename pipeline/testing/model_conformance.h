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
//    parameter, and the head holds exactly the parameters whose shape
//    follows num_classes (compared between 2 and 10 classes): what
//    pretrained weights for another class count leave fresh and what
//    freeze_backbone keeps trainable;
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
//       options = ["depth: 18", "depth: 50"],  # or one string
//       image_size = 16,  # the default is 32
//   )

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
};

void PrintTo(const ModelConformanceParams& params, std::ostream* out);

class ModelConformanceTest : public ::testing::TestWithParam<ModelConformanceParams> {};

std::string ModelConformanceTestName(const ::testing::TestParamInfo<ModelConformanceParams>& info);

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_MODEL_CONFORMANCE_H_
