#ifndef PIPELINE_TRAINER_PARAMETER_GROUPS_H_
#define PIPELINE_TRAINER_PARAMETER_GROUPS_H_

// The optimizer's parameter groups (optimizer.param_groups): the model's
// trainable parameters split by their weight decay and learning-rate scale,
// the way torchvision's reference train.py (set_weight_decay) and timm
// (param_groups_weight_decay, param_groups_layer_decay) build theirs.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pipeline/config/pipeline.pb.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/interfaces/optimizer.h"

namespace pipeline {

// The trainable parameters (requires_grad) of `model`, grouped by `config`.
// Groups are ordered by where their first parameter is in the model, and
// keep the model's order inside; with an empty config (or one that treats
// no parameter specially) it is one group with the optimizer's options. An
// lr_scales pattern that matches no trainable parameter, and a layer_decay
// for a model without a depth order, are errors naming the field.
absl::StatusOr<OptimizerContext> GroupParameters(const ParamGroupsConfig& config, Model& model);

// One line per group for the start header: "param group 1: 8 tensors
// (120 values), lr x10, weight_decay 0" (or "the optimizer's" where the
// group keeps the optimizer's own).
std::vector<std::string> DescribeParameterGroups(const OptimizerContext& context);

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_PARAMETER_GROUPS_H_
