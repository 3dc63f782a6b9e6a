#ifndef PIPELINE_REPORTING_MULTIPLY_ADDS_H_
#define PIPELINE_REPORTING_MULTIPLY_ADDS_H_

// Counts the multiply-adds of the convolutions and matrix products a piece of
// code runs, by observing the ATen operators it dispatches. This is the
// quantity torchvision's model tables list as "GFLOPS" (one multiply-add per
// weight use; element-wise ops, norms and pooling are not counted), so the
// numbers compare directly.

#include <cstdint>
#include <functional>

namespace pipeline {

// Multiply-adds of everything `run` executes on the calling thread.
int64_t CountMultiplyAdds(const std::function<void()>& run);

}  // namespace pipeline

#endif  // PIPELINE_REPORTING_MULTIPLY_ADDS_H_
