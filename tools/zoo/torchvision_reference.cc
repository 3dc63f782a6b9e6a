#include "tools/zoo/torchvision_reference.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace pipeline {
namespace zoo {

absl::StatusOr<TorchvisionReference> ReadTorchvisionReference(const std::string& path) {
  std::ifstream file(path);
  if (!file.good()) {
    return absl::NotFoundError(absl::StrCat(
        "cannot read ", path, " (write it with tools/fixtures/torchvision_model_reference.py)"));
  }
  TorchvisionReference reference;
  std::string line;
  for (int line_number = 1; std::getline(file, line); ++line_number) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, gflops, extra;
    TorchvisionFigures figures;
    const bool parsed = static_cast<bool>(fields >> name >> figures.weights >> figures.parameters >>
                                          gflops >> figures.crop_size) &&
                        !(fields >> extra) &&
                        (gflops == "-" || absl::SimpleAtod(gflops, &figures.gflops));
    if (!parsed) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", line_number, ": \"", line,
          "\" is not `<constructor> <weights> <parameters> <GFLOPS or -> <crop size>`"));
    }
    reference[name] = figures;
  }
  if (reference.empty()) return absl::InvalidArgumentError(absl::StrCat(path, " lists no model"));
  return reference;
}

}  // namespace zoo
}  // namespace pipeline
