#ifndef PIPELINE_WEIGHTS_PRETRAINED_H_
#define PIPELINE_WEIGHTS_PRETRAINED_H_

// Starting a model from saved weights (the `weights` and `freeze_backbone`
// options every model plugin has), shared by all of them.

#include <iosfwd>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/weights/state_dict_reader.h"

namespace pipeline {

// Copies `tensors` (read from `source`, named in messages) into `model`.
// Every parameter and buffer must be there with the model's shape and
// dtype, and nothing else — with one exception: a tensor of the classifier
// head (Model::head_prefixes) whose shape differs, as when ImageNet weights
// (1000 classes) start a 2-class model, keeps its fresh initialisation and
// is named on `log`. Anything else that does not fit is an error listing
// every offending name with its shapes; the model is then left unchanged.
absl::Status LoadStateDict(Model& model, const NamedTensors& tensors, const std::string& source,
                           std::ostream* log);

// The model's state_dict as PyTorch orders it: module by module, each
// module's parameters, then its buffers, then its children — the order
// torch.save(model.state_dict()) writes.
NamedTensors StateDictOf(Model& model);

// Stops gradients to every parameter outside the classifier head, so only
// the head trains. BatchNorm running statistics are buffers, not
// parameters, and still follow the data in training mode. Returns an error
// if the model names no head.
absl::Status FreezeBackbone(Model& model, std::ostream* log);

// The parameters the optimizer should update: those that require gradients.
std::vector<torch::Tensor> TrainableParameters(Model& model);

// What each model plugin's factory returns: `model` with the weights of
// `weights` (if not empty, and if context.load_weights) and its backbone
// frozen if `freeze_backbone`.
absl::StatusOr<std::unique_ptr<Model>> WithPretrainedWeights(std::unique_ptr<Model> model,
                                                             const std::string& weights,
                                                             bool freeze_backbone,
                                                             const ModelContext& context);

// For the plugins' options validators: freeze_backbone needs weights.
absl::Status ValidatePretrainedOptions(const std::string& weights, bool freeze_backbone);

}  // namespace pipeline

#endif  // PIPELINE_WEIGHTS_PRETRAINED_H_
