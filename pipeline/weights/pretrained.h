#ifndef PIPELINE_WEIGHTS_PRETRAINED_H_
#define PIPELINE_WEIGHTS_PRETRAINED_H_

// Starting a model from saved weights: the pieces BuildModel
// (build_model.h) applies for model.weights and model.freeze_backbone, and
// that restoring a checkpoint and resuming a run reuse.

#include <iosfwd>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/weights/state_dict_reader.h"

namespace pipeline {

// Copies `tensors` (read from `source`, named in messages) into `model`.
// Every parameter and buffer must be there with the model's shape and
// dtype, and nothing else, with these exceptions, each named on `log`. A
// float16 or bfloat16 tensor (how weights are often published, in
// safetensors above all) fills a float32 or float64 one, which holds each of
// its values exactly. A tensor of the classifier head (Model::head_prefixes)
// whose shape differs, as when ImageNet weights (1000 classes) start a
// 2-class model, keeps its fresh initialisation. Any other tensor whose shape
// differs is offered to the model's Model::AdaptLoadedTensor, and what it
// converts to the model's shape is loaded (a ViT's position embeddings for
// another image size). Anything else that does not fit (float64 into float32
// among it: that would round) is an error listing every offending name with
// its shapes, and the model's own message where it refused a conversion; the
// model is then left unchanged.
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

}  // namespace pipeline

#endif  // PIPELINE_WEIGHTS_PRETRAINED_H_
