#ifndef TOOLS_ZOO_TORCHVISION_REFERENCE_H_
#define TOOLS_ZOO_TORCHVISION_REFERENCE_H_

// torchvision's published figures for its classification models, as
// tools/fixtures/torchvision_model_reference.py writes them to
// tools/zoo/testdata/torchvision_classification_reference.txt: one line per
// constructor,
//
//   <constructor> <weights> <parameters> <GFLOPS or -> <crop size>
//
// for the weights of the smallest crop size (torchvision's DEFAULT among
// equals); `#` lines are comments.

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace pipeline {
namespace zoo {

struct TorchvisionFigures {
  std::string weights;     // "ResNet18_Weights.IMAGENET1K_V1"
  int64_t parameters = 0;  // its meta's num_params
  // Multiply-adds of one forward pass at crop_size x crop_size, in billions,
  // as torchvision's model table lists them ("GFLOPS"); negative if unknown.
  double gflops = -1;
  int64_t crop_size = 0;
};

// By constructor name.
using TorchvisionReference = std::map<std::string, TorchvisionFigures>;

// NotFound if `path` cannot be read, InvalidArgument naming the line for a
// malformed one.
absl::StatusOr<TorchvisionReference> ReadTorchvisionReference(const std::string& path);

// Where the tool and its test find the reference: relative to the runfiles
// root, their working directory.
inline constexpr char kTorchvisionReferencePath[] =
    "tools/zoo/testdata/torchvision_classification_reference.txt";

}  // namespace zoo
}  // namespace pipeline

#endif  // TOOLS_ZOO_TORCHVISION_REFERENCE_H_
