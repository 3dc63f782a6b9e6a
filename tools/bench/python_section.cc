// python: the data section's pipelines in PIL + torchvision
// (tools/bench_reference.py), 1 thread, against the runner's.

#include <iostream>
#include <string>

#include "absl/strings/str_format.h"
#include "tools/bench/bench_sections.h"

namespace pipeline {
namespace bench {

void RunPythonSection(BenchContext& context) {
  const std::string script = "tools/bench_reference.py";
  const std::string& python_binary = context.options.python;
  const ProcessResult probe = RunChild(context, {python_binary, "-c", "import torchvision, PIL"});
  if (probe.exit_code != 0) {
    context.table.Add({"Python reference (PIL + torchvision)",
                       "skipped: " + python_binary +
                           " has no torchvision; apt-get install python3-torchvision",
                       "-", "-"});
    return;
  }
  const ProcessResult python =
      RunChild(context, {python_binary, script, "--jpeg_root=" + context.corpus});
  const auto jpeg_rate = JsonNumber(python.output, "jpeg_images_per_sec", "jpeg_images_per_sec");
  const auto fashion_mnist_rate =
      JsonNumber(python.output, "jpeg_images_per_sec", "fashion_mnist_images_per_sec");
  if (python.exit_code != 0 || !jpeg_rate || !fashion_mnist_rate) {
    std::cerr << "bench: " << script << " failed:\n" << Tail(python.output) << "\n";
    context.table.Add({"Python reference (PIL + torchvision)", "failed", "-", "-"});
    return;
  }
  // Against the data section's rates, when it ran.
  const std::optional<DataResult>& jpeg = context.jpeg_data;
  const std::optional<DataResult>& fashion_mnist = context.fashion_mnist_data;
  context.table.Add({"Python reference, 1 thread: JPEG, PIL + torchvision, the same transforms "
                     "(tools/bench_reference.py)",
                     absl::StrFormat("%.1f", *jpeg_rate),
                     jpeg ? Ratio(jpeg->images_per_sec, *jpeg_rate) : "-",
                     "C++ pipeline / Python"});
  context.table.Add(
      {"Python reference, 1 thread: Fashion-MNIST, PIL Image + ToTensor + Normalize",
       absl::StrFormat("%.1f", *fashion_mnist_rate),
       fashion_mnist ? Ratio(fashion_mnist->images_per_sec, *fashion_mnist_rate) : "-",
       "C++ pipeline / Python"});
}

}  // namespace bench
}  // namespace pipeline
