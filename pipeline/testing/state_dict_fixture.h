#ifndef PIPELINE_TESTING_STATE_DICT_FIXTURE_H_
#define PIPELINE_TESTING_STATE_DICT_FIXTURE_H_

// Checks that a C++ model's state_dict lines up with torchvision's, entry by
// entry (key, order and shape), against the fixtures written by
// tools/fixtures/torchvision_state_dict_keys.py:
//
//   EXPECT_TRUE(testing::StateDictMatchesFixture(
//       *model, "plugins/models/vgg/testdata/torchvision_vgg16_state_dict.txt"));
//
// A fixture holds one line per state_dict entry: `<key> <dim0>x<dim1>...`,
// or `<key> scalar` for a 0-dimensional tensor (BatchNorm's
// num_batches_tracked). Lines starting with `#` are comments, but for
// `# parameters: <count>`, the model's parameter count (buffers left out),
// which the entries alone cannot tell.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "torch/nn/module.h"

namespace pipeline {
namespace testing {

// One state_dict entry: its key and its shape as a fixture writes it
// ("64x3x7x7", "scalar").
using StateDictEntry = std::pair<std::string, std::string>;

std::string ShapeText(const torch::Tensor& tensor);

// The entries of `module` in the order Python's state_dict() gives them: each
// module's own parameters, then its own buffers, then its children's entries,
// depth-first in registration order. (LibTorch's named_parameters() followed
// by named_buffers() would put every parameter before every buffer.)
std::vector<StateDictEntry> StateDictEntries(const torch::nn::Module& module);

// Reads a fixture; `path` is relative to the test's working directory, the
// runfiles root (so "plugins/models/<name>/testdata/..." for a file in the
// test's `data`). NotFound if it cannot be opened, InvalidArgument for a
// malformed line or an empty file.
absl::StatusOr<std::vector<StateDictEntry>> ReadStateDictFixture(const std::string& path);

// The fixture's `# parameters: <count>`. NotFound if it cannot be opened or
// states none (fixtures written before the scripts wrote the count),
// InvalidArgument if the count does not parse.
absl::StatusOr<int64_t> ReadStateDictParameterCount(const std::string& path);

// Success when `actual` equals `expected`; otherwise a failure that names the
// first entry that differs (index, both key/shape pairs and the entries
// around it), or the first missing or extra entry.
::testing::AssertionResult StateDictEntriesMatch(const std::vector<StateDictEntry>& actual,
                                                 const std::vector<StateDictEntry>& expected);

// StateDictEntries(module) against the fixture at `fixture_path`; a fixture
// that cannot be read is a failure too.
::testing::AssertionResult StateDictMatchesFixture(const torch::nn::Module& module,
                                                   const std::string& fixture_path);

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_STATE_DICT_FIXTURE_H_
