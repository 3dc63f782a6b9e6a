#ifndef PIPELINE_TESTING_DETERMINISTIC_RUN_H_
#define PIPELINE_TESTING_DETERMINISTIC_RUN_H_

// The run the exact-resume tests (resume_test, stop_signal_test) interrupt
// and continue: small_cnn with BatchNorm (running statistics as buffers)
// and momentum SGD on a small synthetic set in deterministic mode, 2
// epochs, one process on batches of 8 or two (ddp) on 4 + 4, writing to
// <dir>/out. Exact resume depends on the state a run carries (weights,
// buffers, optimizer state, random generators, the loader's position), not
// on the model's size, so the model is a small one.

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace pipeline {
namespace testing {

struct DeterministicRun {
  int64_t train_samples = 96;
  int64_t validation_samples = 20;
  uint64_t seed = 5;
  // The body of the config's checkpoint { } block.
  std::string checkpoint = "keep_last: 0";
  // A registered model, all defaults.
  std::string model = "small_cnn";
};

// Writes <dir>/config_<pid>.textproto for `run`; returns its path. The
// process id keeps two copies of the suite running at once (whose temporary
// folders can have the same paths) apart.
inline std::string WriteDeterministicRunConfig(const std::string& dir, bool ddp,
                                               const DeterministicRun& run) {
  std::filesystem::create_directories(dir);
  const std::string path = absl::StrCat(dir, "/config_", ::getpid(), ".textproto");
  const std::string synthetic = R"pb(
        name: "synthetic"
        options {
          [type.googleapis.com/pipeline.SyntheticOptions] {
            height: 16 width: 16 channels: 1 num_classes: 3 )pb";
  std::ofstream(path) << absl::StrCat(
      "model { name: \"", run.model, "\" }\n",
      "train_data {\n  dataset {", synthetic, "num_samples: ", run.train_samples, " } } }\n",
      "  transforms { name: \"random_horizontal_flip\" }\n",
      "  batch_size: ", ddp ? "4 sampler { name: \"distributed\" }" : "8", "\n}\n",
      "validation_data {\n  dataset {", synthetic, "num_samples: ", run.validation_samples,
      " seed_offset: 1 } } }\n}\n",
      "optimizer {\n  name: \"sgd\"\n",
      "  options { [type.googleapis.com/pipeline.SgdOptions] { lr: 0.05 momentum: 0.9 } }\n}\n",
      ddp ? "strategy { name: \"ddp\" options { [type.googleapis.com/pipeline.DdpOptions] { "
            "nproc_per_node: 2 } } }\n"
          : "",
      "trainer { epochs: 2 seed: ", run.seed, " deterministic: true log_interval: 1 }\n",
      "checkpoint { ", run.checkpoint, " }\n",
      "output_dir: \"", dir, "/out\"\n");
  return path;
}

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_DETERMINISTIC_RUN_H_
