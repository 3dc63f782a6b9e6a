#include "pipeline/interfaces/strategy.h"

#include "pipeline/util/torch_status.h"

namespace pipeline {

absl::Status Strategy::Step(Optimizer& optimizer) {
  return CallTorch("optimizer step", [&] { optimizer.step(); });
}

}  // namespace pipeline
