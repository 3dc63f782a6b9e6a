#include "pipeline/weights/restore.h"

#include "absl/strings/str_cat.h"
#include "pipeline/config/config_loader.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/weights/build_model.h"
#include "pipeline/weights/pretrained.h"

namespace pipeline {

absl::StatusOr<RestoredModel> RestoreModel(const std::string& checkpoint_path, bool ema) {
  RestoredModel restored;
  ASSIGN_OR_RETURN(restored.checkpoint, ReadCheckpoint(checkpoint_path));
  const LoadedCheckpoint& checkpoint = restored.checkpoint;
  if (absl::Status status = ParseTextProto(checkpoint.contents.resolved_config,
                                           checkpoint_path + " (its config)", &restored.config);
      !status.ok()) {
    return status;
  }
  // The inputs stand in for the training data the model was built from:
  // its classes are the checkpoint's, and its input channels those of the
  // stem, the first convolution (every model plugin starts with one).
  ModelInputs inputs;
  inputs.data_classes = static_cast<int64_t>(checkpoint.contents.class_names.size());
  for (const auto& [name, tensor] : checkpoint.model) {
    if (tensor.dim() == 4) {
      inputs.data_channels = tensor.size(1);
      break;
    }
  }
  // The weights come from the checkpoint; a `weights` file the run started
  // from is neither needed nor read.
  inputs.load_weights = false;
  auto model = BuildModel(restored.config.model(), inputs);
  if (!model.ok()) {
    return absl::Status(model.status().code(),
                        absl::StrCat(checkpoint_path, ": building the model of its config: ",
                                     model.status().message()));
  }
  if (ema && checkpoint.contents.ema.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        checkpoint_path, ": holds no EMA weights (its run had no trainer.ema); leave out --ema"));
  }
  if (absl::Status status = LoadStateDict(**model, ema ? checkpoint.contents.ema : checkpoint.model,
                                          checkpoint_path, /*log=*/nullptr);
      !status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat("model \"", restored.config.model().name(),
                                     "\" of the checkpoint's config: ", status.message()));
  }
  restored.model = std::move(*model);
  restored.model->eval();
  return restored;
}

}  // namespace pipeline
