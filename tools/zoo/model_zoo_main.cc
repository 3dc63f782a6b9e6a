// The model zoo: every registered model's variants with their parameters and
// forward multiply-adds, beside torchvision's published figures, as a
// Markdown document (docs/models.md):
//
//   bazel run //tools:model_zoo -- --output=docs/models.md

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "ATen/Parallel.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gflags/gflags.h"
#include "tools/zoo/model_variants.h"
#include "tools/zoo/torchvision_reference.h"
#include "tools/zoo/zoo_table.h"

DEFINE_string(output, "", "Write the document here (default: standard output)");

namespace pipeline {
namespace zoo {
namespace {

// /proc/cpuinfo's "model name", as lscpu shows it.
std::string CpuModelName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (absl::StartsWith(line, "model name")) {
      return std::string(absl::StripAsciiWhitespace(line.substr(line.find(':') + 1)));
    }
  }
  return "unknown";
}

void PrintDocument(const std::vector<ZooRow>& rows, const TorchvisionReference& reference,
                   std::ostream& out) {
  out << "# Model zoo\n\n"
      << "Written by `bazel run //tools:model_zoo -- --output=docs/models.md` "
         "(tools/zoo/); do not edit by hand.\n\n"
      << "Every registered model's variants, found from its options message: the values of "
         "an enum field `variant` if it has one, else those of a field `depth` (its enum values, "
         "or the integers from 1 to "
      << kMaxProbedDepth
      << " the plugin's validator accepts), else the default options alone; every other "
         "option at its default. Each is built for "
      << kClasses
      << " classes and 3 input channels. *GMACs* are the multiply-adds of one image's "
         "forward pass in eval mode (pipeline/reporting/multiply_adds.h: convolutions and "
         "matrix products, what torchvision's table calls GFLOPS), at torchvision's crop size "
         "for the model (*image*), else 224x224.\n\n"
      << "The torchvision columns are the figures torchvision publishes for the weights of "
         "the smallest crop size (tools/zoo/testdata/torchvision_classification_reference.txt, "
         "written by tools/fixtures/torchvision_model_reference.py): num_params from "
         "torchvision 0.14.1's weights meta, GFLOPS from the model table of later releases. A "
         "variant is matched to a torchvision constructor as `<variant>`, "
         "`<model>_<variant>` or `<model><variant>` in lower case, or `<model>` without "
         "variants. Models whose reference lists more than "
      << kMaxBuiltParameters / 1000000 << "M parameters are not built.\n\n"
      << "Counts do not depend on the machine; this one ran on: " << CpuModelName() << ".\n\n";
  PrintZooTable(rows, reference, out);
}

}  // namespace
}  // namespace zoo
}  // namespace pipeline

int main(int argc, char** argv) {
  gflags::SetUsageMessage("Prints the model zoo table: bazel run //tools:model_zoo");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  using namespace pipeline;
  using namespace pipeline::zoo;
  // One thread: the counts do not depend on it, and the table builds quicker
  // beside other work.
  at::set_num_threads(1);
  const absl::StatusOr<TorchvisionReference> reference =
      ReadTorchvisionReference(kTorchvisionReferencePath);
  if (!reference.ok()) {
    std::cerr << "error: " << reference.status().message() << "\n";
    return 2;
  }
  std::vector<ZooRow> rows;
  for (const ModelVariant& variant : ListModelVariants()) {
    rows.push_back(MeasureVariant(variant, *reference));
    std::cerr << "model_zoo: " << variant.model << " " << variant.variant << " done\n";
  }
  std::ostringstream document;
  PrintDocument(rows, *reference, document);
  if (FLAGS_output.empty()) {
    std::cout << document.str();
    return 0;
  }
  // `bazel run` starts in the runfiles; --output means the user's folder.
  std::string output = FLAGS_output;
  const char* working_dir = std::getenv("BUILD_WORKING_DIRECTORY");
  if (working_dir != nullptr && output[0] != '/') output = absl::StrCat(working_dir, "/", output);
  std::ofstream file(output, std::ios::binary | std::ios::trunc);
  file << document.str();
  if (!file.good()) {
    std::cerr << "error: cannot write " << output << "\n";
    return 1;
  }
  std::cerr << "wrote " << output << "\n";
  return 0;
}
