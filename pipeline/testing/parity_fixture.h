#ifndef PIPELINE_TESTING_PARITY_FIXTURE_H_
#define PIPELINE_TESTING_PARITY_FIXTURE_H_

// Helpers for tests that compare a model's logits with torchvision's for the
// same weights and input, written by tools/fixtures/torchvision_parity_logits.py.

#include <cstdint>
#include <string>

#include "torch/nn/module.h"

namespace pipeline {
namespace testing {

// `n` values in [-1, 1) from a 32-bit integer hash of (index, seed), exactly
// as hash_wave() in tools/fixtures/torchvision_parity_logits.py computes
// them: integer arithmetic only, so both sides agree bit for bit.
torch::Tensor HashWave(int64_t n, int64_t seed);

// Sets every floating state_dict entry from its key and shape alone, as
// deterministic_value() in the script does, so both sides hold the same
// weights without sharing a checkpoint.
void FillDeterministically(torch::nn::Module& model);

// The script's input: a 2x3x<image_size>x<image_size> float batch from
// HashWave; 64 unless the script ran with another --image_size.
torch::Tensor DeterministicInput(int64_t image_size = 64);

// One row of logits per line, as torchvision_parity_logits.py writes them;
// undefined when the file holds none.
torch::Tensor ReadLogits(const std::string& path);

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_PARITY_FIXTURE_H_
