#include "tools/zoo/zoo_table.h"

#include <memory>
#include <string>
#include <vector>

#include "ATen/ops/randn.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pipeline/registry/registry.h"
#include "pipeline/reporting/multiply_adds.h"
#include "pipeline/util/torch_status.h"
#include "tools/bench/markdown_table.h"
#include "torch/csrc/autograd/grad_mode.h"

namespace pipeline {
namespace zoo {

std::string FindTorchvision(const ModelVariant& variant, const TorchvisionReference& reference) {
  for (const std::string& name : TorchvisionCandidates(variant)) {
    if (reference.count(name)) return name;
  }
  return "";
}

int64_t ParameterCount(const Model& model) {
  int64_t count = 0;
  for (const torch::Tensor& parameter : model.parameters()) count += parameter.numel();
  return count;
}

ZooRow MeasureVariant(const ModelVariant& variant, const TorchvisionReference& reference) {
  ZooRow row{variant.model, variant.variant, FindTorchvision(variant, reference)};
  const TorchvisionFigures* figures =
      row.torchvision.empty() ? nullptr : &reference.at(row.torchvision);
  if (figures != nullptr && figures->parameters > kMaxBuiltParameters) {
    row.note = absl::StrFormat("not built (over %dM parameters)", kMaxBuiltParameters / 1000000);
    return row;
  }
  absl::StatusOr<std::unique_ptr<Model>> model =
      Registry<Model>::Global().Create(variant.config, ModelContext{kClasses, 3});
  if (!model.ok()) {
    row.note = absl::StrCat("not built: ", model.status().message());
    return row;
  }
  row.parameters = ParameterCount(**model);
  (*model)->eval();
  torch::NoGradGuard no_grad;
  row.image_size = figures != nullptr ? figures->crop_size : kDefaultImageSize;
  auto count = [&](int64_t size) {
    const at::Tensor image = at::randn({1, 3, size, size});
    return CallTorch("forward",
                     [&] { return CountMultiplyAdds([&] { (*model)->forward(image); }); });
  };
  absl::StatusOr<int64_t> multiply_adds = count(row.image_size);
  if (!multiply_adds.ok() && row.image_size != kDefaultImageSize) {
    // A model built for one input size (a ViT's image_size) takes only that.
    row.note = absl::StrCat("forward at ", row.image_size, "x", row.image_size, " failed");
    row.image_size = kDefaultImageSize;
    multiply_adds = count(row.image_size);
  }
  if (multiply_adds.ok()) {
    row.multiply_adds = *multiply_adds;
  } else {
    row.note = absl::StrCat("forward failed: ", multiply_adds.status().message());
  }
  return row;
}

void PrintZooTable(const std::vector<ZooRow>& rows, const TorchvisionReference& reference,
                   std::ostream& out) {
  bench::MarkdownTable table({"model", "variant", "parameters", "GMACs", "image", "torchvision",
                              "torchvision parameters", "torchvision GFLOPS", "note"});
  for (const ZooRow& row : rows) {
    const TorchvisionFigures* figures =
        row.torchvision.empty() ? nullptr : &reference.at(row.torchvision);
    table.Add({
        row.model,
        row.variant.empty() ? "-" : row.variant,
        row.parameters > 0 ? absl::StrCat(row.parameters) : "-",
        row.image_size > 0 ? absl::StrFormat("%.3f", row.multiply_adds / 1e9) : "-",
        row.image_size > 0 ? absl::StrCat(row.image_size, "x", row.image_size) : "-",
        row.torchvision.empty() ? "-" : row.torchvision,
        figures != nullptr ? absl::StrCat(figures->parameters) : "-",
        figures != nullptr && figures->gflops >= 0
            ? absl::StrFormat("%.3f at %d", figures->gflops, figures->crop_size)
            : "-",
        row.note,
    });
  }
  table.Print(out);
}

}  // namespace zoo
}  // namespace pipeline
