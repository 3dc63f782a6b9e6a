#include "pipeline/weights/build_model.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "pipeline/registry/registry.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/weights/pretrained.h"
#include "pipeline/weights/state_dict_reader.h"

namespace pipeline {
namespace {

// LoadStateDict and FreezeBackbone name their field bare ("weights: ...",
// "freeze_backbone: ..."); in a config it is the model's.
absl::Status InModelField(const absl::Status& status, const std::string& field) {
  if (status.ok()) return status;
  absl::string_view message = status.message();
  absl::ConsumePrefix(&message, field + ": ");
  return absl::Status(status.code(), absl::StrCat("model.", field, ": ", message));
}

}  // namespace

absl::Status ValidateModelConfig(const ModelConfig& config) {
  std::vector<std::string> errors;
  if (config.num_classes() < 0) {
    errors.push_back(absl::StrCat("model.num_classes: ", config.num_classes(),
                                  " is negative; set a count, or 0 for the training data's "
                                  "classes"));
  }
  if (config.in_channels() < 0) {
    errors.push_back(absl::StrCat("model.in_channels: ", config.in_channels(),
                                  " is negative; set a count, or 0 for the training samples' "
                                  "channels"));
  }
  if (config.freeze_backbone() && config.weights().empty()) {
    errors.push_back(
        "model.freeze_backbone: true needs model.weights: a backbone frozen at its random "
        "initialisation would never learn; set model.weights to a state dict file or drop "
        "freeze_backbone");
  }
  if (errors.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
}

absl::StatusOr<std::unique_ptr<Model>> BuildModel(const ModelConfig& config,
                                                  const ModelInputs& inputs) {
  RETURN_IF_ERROR(ValidateModelConfig(config));
  ModelContext context;
  context.num_classes = config.num_classes() > 0 ? config.num_classes() : inputs.data_classes;
  if (context.num_classes <= 0) {
    return absl::InvalidArgumentError(
        "model.num_classes: 0 takes the training data's class count, but it gives none; set "
        "model.num_classes");
  }
  context.input_channels =
      config.in_channels() > 0 ? config.in_channels() : inputs.data_channels;
  if (context.input_channels <= 0) {
    return absl::InvalidArgumentError(
        "model.in_channels: 0 takes the training samples' channel count, but they give none; "
        "set model.in_channels");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                   Registry<Model>::Global().Create(config, context));
  // The caller that restores weights itself (a checkpoint, or the replicas
  // of a model that already has them) skips the file, which need not exist
  // any more, and the freezing that belongs with it.
  if (!inputs.load_weights || config.weights().empty()) return model;
  auto tensors = ReadStateDict(config.weights());
  if (!tensors.ok()) {
    return absl::Status(tensors.status().code(),
                        absl::StrCat("model.weights: ", tensors.status().message()));
  }
  RETURN_IF_ERROR(
      InModelField(LoadStateDict(*model, *tensors, config.weights(), inputs.log), "weights"));
  if (config.freeze_backbone()) {
    RETURN_IF_ERROR(InModelField(FreezeBackbone(*model, inputs.log), "freeze_backbone"));
  }
  return model;
}

}  // namespace pipeline
