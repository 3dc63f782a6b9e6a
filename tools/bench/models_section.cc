// models: parameters, forward multiply-adds at 224 and training images/s of
// every backbone, in a table of its own, each beside torchvision's model of
// the same name trained the same way in Python (tools/bench_models_reference.py,
// same threads and allocator), measured in turn.

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ATen/Parallel.h"
#include "ATen/ops/cross_entropy_loss.h"
#include "ATen/ops/randint.h"
#include "ATen/ops/randn.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/text_format.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/reporting/multiply_adds.h"
#include "pipeline/registry/registry.h"
#include "tools/bench/bench_sections.h"
#include "tools/bench/child_output.h"
#include "tools/bench/markdown_table.h"
#include "tools/bench/or_die.h"
#include "tools/bench/timing.h"
#include "torch/csrc/autograd/grad_mode.h"
#include "torch/optim/sgd.h"

namespace pipeline {
namespace bench {
namespace {

struct ModelCase {
  std::string label;   // torchvision's name for it, where it has one
  std::string config;  // a PluginConfig in text
  // The builder's keyword arguments, as JSON, for the Python reference.
  std::string torchvision_kwargs = "{}";
  bool in_torchvision = true;
};

std::vector<ModelCase> AllModels() {
  auto options = [](const std::string& name, const std::string& type, const std::string& fields) {
    return absl::StrCat("name: \"", name, "\" options { [type.googleapis.com/pipeline.", type,
                        "] { ", fields, " } }");
  };
  std::vector<ModelCase> cases = {
      {"alexnet", "name: \"alexnet\""},
  };
  for (int depth : {11, 13, 16}) {
    for (bool bn : {false, true}) {
      cases.push_back({absl::StrCat("vgg", depth, bn ? "_bn" : ""),
                       options("vgg", "VggOptions",
                               absl::StrCat("depth: ", depth, " batch_norm: ", bn ? "true" : "false"))});
    }
  }
  for (int depth : {18, 34, 50, 101}) {
    cases.push_back({absl::StrCat("resnet", depth),
                     options("resnet", "ResNetOptions", absl::StrCat("depth: ", depth))});
  }
  cases.push_back({"resnext50_32x4d",
                   options("resnet", "ResNetOptions", "depth: 50 groups: 32 width_per_group: 4")});
  cases.push_back({"densenet121", "name: \"densenet\""});
  cases.push_back(
      {"squeezenet1_1", options("squeezenet", "SqueezeNetOptions", "variant: SQUEEZENET1_1")});
  cases.push_back({"mobilenet_v2", "name: \"mobilenet_v2\""});
  cases.push_back({"mobilenet_v3_small",
                   options("mobilenet_v3", "MobileNetV3Options", "variant: SMALL")});
  cases.push_back({"mobilenet_v3_large",
                   options("mobilenet_v3", "MobileNetV3Options", "variant: LARGE")});
  cases.push_back({"efficientnet_b0", "name: \"efficientnet\""});
  cases.push_back({"efficientnet_v2_s",
                   options("efficientnet", "EfficientNetOptions", "variant: V2_S")});
  cases.push_back({"regnet_y_400mf",
                   options("regnet", "RegNetOptions", "variant: REGNET_Y_400MF")});
  cases.push_back({"swin_t", "name: \"swin\""});
  cases.push_back({"maxvit_t", "name: \"maxvit\""});
  cases.push_back({"convnext_tiny", "name: \"convnext\""});
  cases.push_back({"vit_b_32", options("vit", "VisionTransformerOptions", "variant: B_32")});
  cases.push_back({"shufflenet_v2_x0_5",
                   options("shufflenet_v2", "ShuffleNetV2Options", "variant: X0_5")});
  cases.push_back({"mnasnet0_5", options("mnasnet", "MnasNetOptions", "variant: MNASNET0_5")});
  // Without their auxiliary classifiers, whose losses this section's step
  // leaves out (and which Inception v3 cannot run at 224x224): torchvision's
  // published parameter counts are of these networks too.
  cases.push_back({"googlenet", options("googlenet", "GoogLeNetOptions", "aux_logits: false"),
                   R"({"aux_logits": false, "init_weights": true})"});
  cases.push_back({"inception_v3",
                   options("inception_v3", "InceptionV3Options", "aux_logits: false"),
                   R"({"aux_logits": false, "init_weights": true})"});
  cases.push_back({"mobilenet_v1", "name: \"mobilenet_v1\"", "{}", false});
  cases.push_back({"small_cnn", "name: \"small_cnn\"", "{}", false});
  return cases;
}

struct ModelFigures {
  int64_t parameters = 0;
  int64_t forward_macs = 0;
  double training_images_per_sec = 0;
};

// `c` with 1000 classes: its size, and SGD with momentum at batch
// --models_batch_size.
ModelFigures MeasureModel(const BenchOptions& options, const ModelCase& c) {
  PluginConfig plugin;
  if (!google::protobuf::TextFormat::ParseFromString(c.config, &plugin)) {
    Die(absl::InternalError("bad model case " + c.label));
  }
  auto model = OrDie(Registry<Model>::Global().Create(plugin, {1000, 3}));
  ModelFigures figures;
  for (const auto& p : model->parameters()) figures.parameters += p.numel();
  model->eval();
  {
    torch::NoGradGuard no_grad;
    const at::Tensor image = at::randn({1, 3, 224, 224});
    figures.forward_macs = CountMultiplyAdds([&] { model->forward(image); });
  }
  model->train();
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  const at::Tensor images = at::randn({options.models_batch_size, 3, 224, 224});
  const at::Tensor labels = at::randint(1000, {options.models_batch_size}, at::kLong);
  const double steps = StepsPerSecond(
      options.min_seconds,
      [&] {
        sgd.zero_grad();
        at::cross_entropy_loss(model->forward(images), labels).backward();
        sgd.step();
      },
      1, 2);
  figures.training_images_per_sec = steps * options.models_batch_size;
  return figures;
}

// torchvision's `c` trained the same way by tools/bench_models_reference.py;
// why not, when it could not run.
absl::StatusOr<double> MeasureTorchvision(const BenchOptions& options, const ModelCase& c,
                                          int threads) {
  if (!c.in_torchvision) return absl::NotFoundError("not in torchvision");
  const ProcessResult python = RunProcess(
      {options.python, "tools/bench_models_reference.py", "--model=" + c.label,
       "--kwargs=" + c.torchvision_kwargs,
       absl::StrCat("--batch_size=", options.models_batch_size),
       absl::StrCat("--threads=", threads), absl::StrCat("--min_seconds=", options.min_seconds)},
      TcmallocPreload(), options.work_dir + "/models_reference_output.txt");
  const auto rate = JsonNumber(python.output, "model_images_per_sec", "model_images_per_sec");
  if (python.exit_code != 0 || !rate) {
    return absl::UnavailableError(absl::StrCat(options.python, " failed: ", Tail(python.output)));
  }
  return *rate;
}

}  // namespace

void RunModelsSection(const BenchOptions& options) {
  std::set<std::string> only;
  for (absl::string_view label : absl::StrSplit(options.models, ',', absl::SkipEmpty())) {
    only.insert(std::string(label));
  }
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(threads);
  const bool python_has_torchvision =
      RunProcess({options.python, "-c", "import torchvision"}, {},
                 options.work_dir + "/models_reference_output.txt")
          .exit_code == 0;
  std::cout << absl::StrFormat(
      "## Models at 224x224, 1000 classes (training: batch %d, SGD with momentum, %d threads; "
      "torchvision: the same model and step in Python, %s)\n\n",
      options.models_batch_size, threads,
      python_has_torchvision ? "tools/bench_models_reference.py"
                             : "skipped: " + options.python +
                                   " has no torchvision; apt-get install python3-torchvision");
  MarkdownTable table({"model", "parameters", "forward GMACs", "training images/s",
                       "torchvision images/s", "runner / torchvision"});
  for (const ModelCase& c : AllModels()) {
    if (!only.empty() && !only.count(c.label)) continue;
    const ModelFigures ours = MeasureModel(options, c);
    std::string reference = "-";
    std::string ratio = "-";
    if (python_has_torchvision && c.in_torchvision) {
      const absl::StatusOr<double> theirs = MeasureTorchvision(options, c, threads);
      if (theirs.ok()) {
        reference = absl::StrFormat("%.1f", *theirs);
        ratio = Ratio(ours.training_images_per_sec, *theirs);
      } else {
        std::cerr << "bench: " << c.label << ": " << theirs.status().message() << "\n";
        reference = "failed";
      }
    }
    table.Add({c.label, absl::StrFormat("%.2fM", ours.parameters / 1e6),
               absl::StrFormat("%.3f", ours.forward_macs / 1e9),
               absl::StrFormat("%.1f", ours.training_images_per_sec), reference, ratio});
    std::cerr << "bench: " << c.label << " done\n";
  }
  table.Print(std::cout);
}

}  // namespace bench
}  // namespace pipeline
