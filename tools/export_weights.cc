// export_weights: a checkpoint of train as a state dict file for Python.
//
//   checkpoint=runs/single/checkpoint_epoch_2.pt
//   bazel run //tools:export_weights -- --checkpoint=$checkpoint --output=model_state_dict.pt
//
// and then, in Python:
//
//   model = torchvision.models.resnet18(num_classes=10)
//   model.load_state_dict(torch.load("model_state_dict.pt"))
//
// The file is what torch.save(dict(model.state_dict())) writes (a dict of
// tensors in state_dict order), and is itself accepted by every model's
// `weights` option. The checkpoint's model plugin must be linked in (all of
// plugins/all_plugins.bzl are).
//
// --format=safetensors writes a safetensors file instead, byte for byte what
// Python's safetensors.torch.save_file(state_dict, path,
// metadata={"format": "pt"}) writes for the same tensors (float32, and int64
// for BatchNorm's num_batches_tracked):
//
//   from safetensors.torch import load_file
//   model.load_state_dict(load_file("model.safetensors"))
//
// --ema exports the run's EMA average (trainer.ema) instead.
//
// Exit status: 0 written, 2 the checkpoint, the format or the output path is
// wrong.

#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "pipeline/weights/pretrained.h"
#include "pipeline/weights/restore.h"
#include "pipeline/weights/safetensors.h"
#include "pipeline/weights/state_dict_reader.h"

DEFINE_string(checkpoint, "", "A checkpoint written by train (checkpoint_epoch_N.pt)");
DEFINE_string(output, "",
              "Where to write the state dict (default model_state_dict.pt, or "
              "model_state_dict.safetensors with --format=safetensors)");
DEFINE_string(format, "pt",
              "pt: torch.save's format (torch.load reads it); safetensors: Hugging Face's "
              "safetensors (safetensors.torch.load_file reads it)");
DEFINE_bool(ema, false,
            "Export the checkpoint's EMA average (trainer.ema) instead of the raw weights");

namespace pipeline {
namespace {

int Fail(const absl::Status& status) {
  std::cerr << "error: " << status.message() << "\n";
  return 2;
}

int Main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "Writes a checkpoint's model weights as a state dict Python's torch.load (or, with\n"
      "--format=safetensors, safetensors.torch.load_file) reads.\n"
      "  export_weights --checkpoint=<checkpoint_epoch_N.pt> [--format=pt|safetensors] "
      "--output=<file>");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  // `bazel run` starts the binary in its runfiles; relative paths mean the
  // folder bazel was called from.
  const char* working_dir = std::getenv("BUILD_WORKING_DIRECTORY");
  if (working_dir != nullptr && *working_dir != '\0' && ::chdir(working_dir) != 0) {
    return Fail(absl::InternalError(absl::StrCat("cannot enter ", working_dir)));
  }
  if (argc > 1) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("unexpected argument \"", argv[1], "\"; see --help")));
  }
  if (FLAGS_checkpoint.empty()) {
    return Fail(absl::InvalidArgumentError("--checkpoint: empty; name a checkpoint of train"));
  }
  const bool safetensors = FLAGS_format == "safetensors";
  if (!safetensors && FLAGS_format != "pt") {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--format: \"", FLAGS_format, "\" is neither pt nor safetensors")));
  }
  const std::string output = !FLAGS_output.empty() ? FLAGS_output
                             : safetensors         ? "model_state_dict.safetensors"
                                                   : "model_state_dict.pt";
  // Building the model checks the tensors against it and gives them
  // torch's state_dict order, which the checkpoint does not keep.
  auto restored = RestoreModel(FLAGS_checkpoint, FLAGS_ema);
  if (!restored.ok()) return Fail(restored.status());
  const NamedTensors tensors = StateDictOf(*restored->model);
  if (absl::Status status =
          safetensors ? WriteSafetensors(output, tensors) : WriteStateDict(output, tensors);
      !status.ok()) {
    return Fail(status);
  }
  std::cout << "wrote " << tensors.size() << " tensors of model \""
            << restored->config.model().name() << "\"" << (FLAGS_ema ? ", EMA average" : "")
            << " (epoch "
            << restored->checkpoint.contents.epoch << ", "
            << restored->checkpoint.contents.class_names.size() << " classes) to " << output
            << "\n";
  return 0;
}

}  // namespace
}  // namespace pipeline

int main(int argc, char** argv) { return pipeline::Main(argc, argv); }
