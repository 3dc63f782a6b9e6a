#ifndef TOOLS_ZOO_MODEL_VARIANTS_H_
#define TOOLS_ZOO_MODEL_VARIANTS_H_

// The sizes of every registered model, found from its options message alone
// (protobuf reflection), so the zoo table names no plugin:
//
//  - an enum field `variant`: one row per value (EfficientNet's B0,
//    MobileNetV3's LARGE and SMALL);
//  - else a field `depth`: one row per value of its enum, or per integer
//    from 1 to kMaxProbedDepth that the plugin's validator accepts
//    (Registry::Validate, which builds nothing: ResNet's 18 ... 101);
//  - else one row, the default options.
//
// Every other option keeps its default.

#include <string>
#include <vector>

#include "pipeline/config/pipeline.pb.h"

namespace pipeline {
namespace zoo {

// The largest integer depth tried; torchvision's deepest model has 201
// layers (DenseNet-201).
inline constexpr int kMaxProbedDepth = 256;

struct ModelVariant {
  std::string model;    // the registered name
  std::string variant;  // the enum value's name or the depth; "" for the default
  PluginConfig config;  // the model with that variant's options
};

// Every registered model's variants, by model name, then in the order of
// the enum's values or the depths.
std::vector<ModelVariant> ListModelVariants();

// The torchvision.models constructor names a variant may go by, most
// specific first: "<variant>", "<model>_<variant>", "<model><variant>" in
// lower case ("resnet" + "18" -> "resnet18", "mobilenet_v3" + "LARGE" ->
// "mobilenet_v3_large"), or "<model>" for a model without variants.
std::vector<std::string> TorchvisionCandidates(const ModelVariant& variant);

}  // namespace zoo
}  // namespace pipeline

#endif  // TOOLS_ZOO_MODEL_VARIANTS_H_
