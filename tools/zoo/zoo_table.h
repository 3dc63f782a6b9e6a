#ifndef TOOLS_ZOO_ZOO_TABLE_H_
#define TOOLS_ZOO_ZOO_TABLE_H_

// The model zoo table (bazel run //tools:model_zoo): for every registered
// model's variants (model_variants.h), its parameters and forward
// multiply-adds beside torchvision's published figures.

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "pipeline/interfaces/model.h"
#include "tools/zoo/model_variants.h"
#include "tools/zoo/torchvision_reference.h"

namespace pipeline {
namespace zoo {

// Models whose reference lists more parameters are not built: their
// initialisation alone would take longer than the rest of the table.
inline constexpr int64_t kMaxBuiltParameters = 300'000'000;

// The image size when torchvision lists none for the model.
inline constexpr int64_t kDefaultImageSize = 224;

// torchvision's class count, at which its figures are taken.
inline constexpr int64_t kClasses = 1000;

// The first of TorchvisionCandidates(variant) that `reference` lists; "" if
// none.
std::string FindTorchvision(const ModelVariant& variant, const TorchvisionReference& reference);

int64_t ParameterCount(const Model& model);

struct ZooRow {
  std::string model;
  std::string variant;
  std::string torchvision;  // "" where torchvision has no such model
  int64_t parameters = 0;   // 0 where not built
  int64_t multiply_adds = 0;
  int64_t image_size = 0;  // of the multiply-add count
  std::string note;        // why a figure is missing
};

// One row: the model built for 1000 classes and 3 channels, one image of
// torchvision's crop size for it (224 where unknown) through forward() in
// eval mode.
ZooRow MeasureVariant(const ModelVariant& variant, const TorchvisionReference& reference);

// The rows as a Markdown table, torchvision's figures beside them.
void PrintZooTable(const std::vector<ZooRow>& rows, const TorchvisionReference& reference,
                   std::ostream& out);

}  // namespace zoo
}  // namespace pipeline

#endif  // TOOLS_ZOO_ZOO_TABLE_H_
