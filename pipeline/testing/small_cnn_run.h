#ifndef PIPELINE_TESTING_SMALL_CNN_RUN_H_
#define PIPELINE_TESTING_SMALL_CNN_RUN_H_

// The config of the tests' quick runs of `train`: small_cnn without
// BatchNorm on 8x8 synthetic images (96 to train, 30 to validate, 3
// classes), SGD with momentum. It trains in seconds on a busy machine, and
// without batch statistics ddp on 4 + 4 samples computes the same gradients
// as one process on 8, so every strategy can be compared with `single`.

#include <string>

#include "absl/strings/str_cat.h"

namespace pipeline {
namespace testing {

struct SmallCnnRun {
  std::string strategy = "name: \"single\"";  // the body of strategy { }
  bool distributed_sampler = false;           // ddp's shards
  int batch_size = 8;                         // per process
  std::string trainer = "epochs: 3 seed: 7";  // the body of trainer { }
  std::string checkpoint = "every_epochs: 0";  // the body of checkpoint { }
  std::string output_dir;
  // With BatchNorm only ddp's sync_batch_norm computes what one process on
  // the whole batch does.
  bool batch_norm = false;
};

// The strategy { } body of `nproc_per_node` ddp workers.
inline std::string DdpStrategy(int nproc_per_node) {
  return absl::StrCat("name: \"ddp\" options { [type.googleapis.com/pipeline.DdpOptions] { ",
                      "nproc_per_node: ", nproc_per_node, " } }");
}

inline std::string SmallCnnConfigText(const SmallCnnRun& run) {
  const std::string synthetic =
      "name: \"synthetic\" options { [type.googleapis.com/pipeline.SyntheticOptions] { "
      "height: 8 width: 8 channels: 1 num_classes: 3 ";
  return absl::StrCat(
      "model { name: \"small_cnn\" options { [type.googleapis.com/pipeline.SmallCnnOptions] { "
      "width: 8 batch_norm: ", run.batch_norm ? "true" : "false", " } } }\n",
      "train_data { dataset { ", synthetic, "num_samples: 96 } } }",
      run.distributed_sampler ? " sampler { name: \"distributed\" }" : "",
      " batch_size: ", run.batch_size, " }\n",
      "validation_data { dataset { ", synthetic, "num_samples: 30 seed_offset: 1 } } } }\n",
      "optimizer { name: \"sgd\" options { [type.googleapis.com/pipeline.SgdOptions] { lr: 0.05 "
      "momentum: 0.9 } } }\n",
      "strategy { ", run.strategy, " }\n",
      "trainer { ", run.trainer, " }\n",
      "checkpoint { ", run.checkpoint, " }\n",
      "output_dir: \"", run.output_dir, "\"\n");
}

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_SMALL_CNN_RUN_H_
