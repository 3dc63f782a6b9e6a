#include "pipeline/weights/pretrained.h"

#include <algorithm>
#include <map>
#include <ostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/util/torch_status.h"
#include "torch/csrc/autograd/grad_mode.h"

namespace pipeline {
namespace {

std::string ShapeOf(const torch::Tensor& tensor) {
  if (tensor.dim() == 0) return "scalar";
  return absl::StrJoin(tensor.sizes(), "x");
}

bool InHead(const std::string& name, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& prefix) { return name.rfind(prefix, 0) == 0; });
}

// "a, b, c and 4 more": long lists (a file for another architecture) stay
// readable.
std::string Listed(const std::vector<std::string>& items) {
  constexpr size_t kShown = 10;
  const size_t shown = std::min(items.size(), kShown);
  std::string text = absl::StrJoin(items.begin(), items.begin() + shown, ", ");
  if (items.size() > shown) absl::StrAppend(&text, " and ", items.size() - shown, " more");
  return text;
}

// Whether every value of `file` is exactly a value of `model`: float16 and
// bfloat16 files (how weights are often published) into a float32 or
// float64 model. Anything that could round, float64 into float32 among
// them, stays an error.
bool Widens(torch::ScalarType file, torch::ScalarType model) {
  return (file == torch::kHalf || file == torch::kBFloat16) &&
         (model == torch::kFloat || model == torch::kDouble);
}

// The model's state_dict: parameters and buffers by name.
std::vector<std::pair<std::string, torch::Tensor>> ModelTensors(Model& model) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& item : model.named_parameters()) tensors.emplace_back(item.key(), item.value());
  for (const auto& item : model.named_buffers()) tensors.emplace_back(item.key(), item.value());
  return tensors;
}

void AppendStateDict(const torch::nn::Module& module, const std::string& prefix,
                     NamedTensors* out) {
  for (const auto& item : module.named_parameters(/*recurse=*/false)) {
    out->emplace_back(prefix + item.key(), item.value());
  }
  for (const auto& item : module.named_buffers(/*recurse=*/false)) {
    out->emplace_back(prefix + item.key(), item.value());
  }
  for (const auto& child : module.named_children()) {
    AppendStateDict(*child.value(), prefix + child.key() + ".", out);
  }
}

// The model's conversion of a loaded tensor (Model::AdaptLoadedTensor); an
// exception from it is an error, not a crash.
absl::StatusOr<torch::Tensor> ConvertedByTheModel(const Model& model, const std::string& name,
                                                  const torch::Tensor& loaded,
                                                  const torch::Tensor& target) {
  torch::NoGradGuard no_grad;
  absl::StatusOr<torch::Tensor> converted = torch::Tensor();
  const absl::Status call = CallTorch(
      absl::StrCat(name, ": converting the file's ", ShapeOf(loaded), " to the model's ",
                   ShapeOf(target)),
      [&] { converted = model.AdaptLoadedTensor(name, loaded, target); });
  if (!call.ok()) return call;
  return converted;
}

}  // namespace

NamedTensors StateDictOf(Model& model) {
  NamedTensors tensors;
  AppendStateDict(model, "", &tensors);
  return tensors;
}

absl::Status LoadStateDict(Model& model, const NamedTensors& tensors, const std::string& source,
                           std::ostream* log) {
  std::map<std::string, const torch::Tensor*> from_file;
  for (const auto& [name, tensor] : tensors) from_file[name] = &tensor;
  const std::vector<std::string> head = model.head_prefixes();

  std::vector<std::string> missing, mismatched, wrong_dtype, skipped, converted, refused;
  std::map<std::string, int> widened;  // "Half to Float" -> tensors
  // Each model tensor with what it gets: the file's tensor, or the model's
  // conversion of it.
  std::vector<std::pair<torch::Tensor, torch::Tensor>> copies;
  const auto model_tensors = ModelTensors(model);
  for (const auto& [name, target] : model_tensors) {
    auto it = from_file.find(name);
    if (it == from_file.end()) {
      missing.push_back(absl::StrCat(name, " (", ShapeOf(target), ")"));
      continue;
    }
    torch::Tensor loaded = *it->second;
    from_file.erase(it);
    if (loaded.sizes() != target.sizes()) {
      const std::string what =
          absl::StrCat(name, " (file ", ShapeOf(loaded), ", model ", ShapeOf(target), ")");
      if (InHead(name, head)) {
        skipped.push_back(what);
        continue;
      }
      absl::StatusOr<torch::Tensor> adapted = ConvertedByTheModel(model, name, loaded, target);
      if (!adapted.ok()) {
        refused.push_back(std::string(adapted.status().message()));
        continue;
      }
      if (!adapted->defined() || adapted->sizes() != target.sizes()) {
        mismatched.push_back(what);
        continue;
      }
      converted.push_back(what);
      loaded = *std::move(adapted);
    }
    if (loaded.scalar_type() != target.scalar_type()) {
      if (!Widens(loaded.scalar_type(), target.scalar_type())) {
        wrong_dtype.push_back(absl::StrCat(name, " (file ", c10::toString(loaded.scalar_type()),
                                           ", model ", c10::toString(target.scalar_type()), ")"));
        continue;
      }
      ++widened[absl::StrCat(c10::toString(loaded.scalar_type()), " to ",
                             c10::toString(target.scalar_type()))];
    }
    copies.emplace_back(target, loaded);
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, tensor] : tensors) {
    if (from_file.count(name)) unexpected.push_back(absl::StrCat(name, " (", ShapeOf(tensor), ")"));
  }

  std::vector<std::string> problems;
  if (!missing.empty())
    problems.push_back(absl::StrCat("missing from the file: ", Listed(missing)));
  if (!unexpected.empty()) {
    problems.push_back(absl::StrCat("not in the model: ", Listed(unexpected)));
  }
  if (!mismatched.empty()) {
    problems.push_back(absl::StrCat("shapes differ: ", Listed(mismatched)));
  }
  problems.insert(problems.end(), refused.begin(), refused.end());
  if (!wrong_dtype.empty()) {
    problems.push_back(absl::StrCat("dtypes differ: ", Listed(wrong_dtype)));
  }
  if (!problems.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights: ", source,
                     " does not fit this model (another architecture, "
                     "depth or width?); ",
                     absl::StrJoin(problems, "; ")));
  }

  RETURN_IF_ERROR(CallTorch(absl::StrCat("weights: copying from ", source), [&] {
    torch::NoGradGuard no_grad;
    for (auto& [target, loaded] : copies) target.copy_(loaded);
  }));
  if (log) {
    *log << "weights: loaded " << copies.size() << " of " << model_tensors.size()
         << " tensors from " << source << "\n";
    for (const auto& [conversion, count] : widened) {
      *log << "weights: converted " << count << (count == 1 ? " tensor" : " tensors") << " from "
           << conversion << ", which holds every value exactly\n";
    }
    if (!converted.empty()) {
      *log << "weights: converted " << absl::StrJoin(converted, ", ")
           << " to the model's shape, as its options ask\n";
    }
    if (!skipped.empty()) {
      *log << "weights: kept the fresh initialisation of " << absl::StrJoin(skipped, ", ")
           << ": the classifier head's shape differs from the file's (another number of "
              "classes)\n";
    }
  }
  return absl::OkStatus();
}

absl::Status FreezeBackbone(Model& model, std::ostream* log) {
  const std::vector<std::string> head = model.head_prefixes();
  if (head.empty()) {
    return absl::InvalidArgumentError("freeze_backbone: this model names no classifier head");
  }
  int64_t frozen = 0, frozen_values = 0;
  std::vector<std::string> trained;
  for (auto& item : model.named_parameters()) {
    if (InHead(item.key(), head)) {
      trained.push_back(item.key());
      continue;
    }
    item.value().set_requires_grad(false);
    ++frozen;
    frozen_values += item.value().numel();
  }
  if (log) {
    *log << "freeze_backbone: froze " << frozen << " parameter tensors (" << frozen_values
         << " values); training only " << absl::StrJoin(trained, ", ") << "\n";
  }
  return absl::OkStatus();
}

std::vector<torch::Tensor> TrainableParameters(Model& model) {
  std::vector<torch::Tensor> trainable;
  for (const torch::Tensor& parameter : model.parameters()) {
    if (parameter.requires_grad()) trainable.push_back(parameter);
  }
  return trainable;
}

}  // namespace pipeline
