#ifndef PIPELINE_WEIGHTS_STATE_DICT_READER_H_
#define PIPELINE_WEIGHTS_STATE_DICT_READER_H_

// Reading model weights written by Python or by this project:
//
//  - torch.save(model.state_dict(), path): a zip archive whose data.pkl
//    pickles a collections.OrderedDict of tensors. LibTorch 1.13's own
//    unpickler (torch::pickle_load) turns the OrderedDict into None, so this
//    reads the subset of the pickle format torch.save emits itself, and the
//    tensor data with caffe2's PyTorchStreamReader;
//  - torch.save(dict(...)), and a dict holding the state dict under
//    "state_dict" or "model" (the usual training-script checkpoint);
//  - a checkpoint written by the trainer (checkpoint_epoch_N.pt);
//  - a safetensors file (safetensors.h), told apart by its content.
//
// Nothing is executed from the file: only the globals a state dict needs
// (tensor rebuilding, storage types, OrderedDict) are understood, anything
// else is an error; safetensors has no code to run at all.

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "torch/types.h"

namespace pipeline {

// state_dict names and tensors, in the file's order.
using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// The state dict in `path`, or an error naming `path` and what is wrong:
// not a zip archive, truncated, a pickle that is not a state dict, or a
// tensor whose storage is too short. Safetensors files (IsSafetensorsFile)
// go to ReadSafetensors; their tensors keep the file's dtypes.
absl::StatusOr<NamedTensors> ReadStateDict(const std::string& path);

// Only the torch.save format (no project checkpoints); `path` is used in
// messages. Exposed for tests.
absl::StatusOr<NamedTensors> ReadTorchSaveStateDict(const std::string& path);

// Writes `tensors` as Python's torch.save(dict) would, so torch.load(path)
// gives a dict of tensors that load_state_dict accepts.
absl::Status WriteStateDict(const std::string& path, const NamedTensors& tensors);

}  // namespace pipeline

#endif  // PIPELINE_WEIGHTS_STATE_DICT_READER_H_
