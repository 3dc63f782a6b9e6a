#include "pipeline/testing/state_dict_fixture.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "pipeline/testing/temp_path.h"
#include "torch/nn/modules/batchnorm.h"
#include "torch/nn/modules/container/sequential.h"
#include "torch/nn/modules/linear.h"

namespace pipeline {
namespace testing {
namespace {

// A parent with its own parameter and buffer registered after a child: Python
// lists the parent's own entries first anyway.
class ParentImpl : public torch::nn::Module {
 public:
  ParentImpl() {
    register_module("block",
                    torch::nn::Sequential(torch::nn::Linear(4, 3), torch::nn::BatchNorm1d(3)));
    register_parameter("scale", torch::ones({2}));
    register_buffer("count", torch::zeros({}));
  }
};
TORCH_MODULE(Parent);

TEST(StateDictEntriesTest, FollowsPythonStateDictOrder) {
  const std::vector<StateDictEntry> expected = {
      {"scale", "2"},
      {"count", "scalar"},
      {"block.0.weight", "3x4"},
      {"block.0.bias", "3"},
      {"block.1.weight", "3"},
      {"block.1.bias", "3"},
      {"block.1.running_mean", "3"},
      {"block.1.running_var", "3"},
      {"block.1.num_batches_tracked", "scalar"},
  };
  EXPECT_EQ(StateDictEntries(*Parent()), expected);
}

TEST(StateDictEntriesMatchTest, NamesTheFirstDifference) {
  const std::vector<StateDictEntry> expected = {{"a", "1"}, {"b", "2x3"}, {"c", "4"}};
  EXPECT_TRUE(StateDictEntriesMatch(expected, expected));

  const ::testing::AssertionResult shape =
      StateDictEntriesMatch({{"a", "1"}, {"b", "3x2"}, {"c", "4"}}, expected);
  ASSERT_FALSE(shape);
  const std::string shape_prefix =
      "state_dict entry 1 differs in its shape: model has \"b 3x2\", fixture has \"b 2x3\"";
  EXPECT_EQ(std::string(shape.message()).substr(0, shape_prefix.size()), shape_prefix)
      << shape.message();

  const ::testing::AssertionResult key =
      StateDictEntriesMatch({{"a", "1"}, {"x", "2x3"}, {"c", "4"}}, expected);
  ASSERT_FALSE(key);
  EXPECT_NE(std::string(key.message()).find("entry 1 differs in its key"), std::string::npos)
      << key.message();

  const ::testing::AssertionResult missing = StateDictEntriesMatch({{"a", "1"}}, expected);
  ASSERT_FALSE(missing);
  EXPECT_EQ(
      std::string(missing.message()),
      "the model has 1 state_dict entries, the fixture 3; the first missing is [1] \"b 2x3\"");

  const ::testing::AssertionResult extra =
      StateDictEntriesMatch({{"a", "1"}, {"b", "2x3"}, {"c", "4"}, {"d", "5"}}, expected);
  ASSERT_FALSE(extra);
  EXPECT_EQ(std::string(extra.message()),
            "the model has 4 state_dict entries, the fixture 3; the first extra is [3] \"d 5\"");
}

TEST(ReadStateDictFixtureTest, ReadsKeysAndShapes) {
  const std::string path = testing::TempPath("fixture.txt");
  std::ofstream(path) << "conv.weight 8x3x3x3\nbn.num_batches_tracked scalar\n";
  auto entries = ReadStateDictFixture(path);
  ASSERT_TRUE(entries.ok()) << entries.status();
  EXPECT_EQ(*entries, (std::vector<StateDictEntry>{{"conv.weight", "8x3x3x3"},
                                                   {"bn.num_batches_tracked", "scalar"}}));
}

TEST(ReadStateDictFixtureTest, SkipsCommentsAndReadsTheParameterCount) {
  const std::string path = testing::TempPath("counted.txt");
  std::ofstream(path) << "# parameters: 224\nconv.weight 8x3x3x3\n# a note\nconv.bias 8\n";
  auto entries = ReadStateDictFixture(path);
  ASSERT_TRUE(entries.ok()) << entries.status();
  EXPECT_EQ(*entries,
            (std::vector<StateDictEntry>{{"conv.weight", "8x3x3x3"}, {"conv.bias", "8"}}));
  auto count = ReadStateDictParameterCount(path);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 224);

  const std::string uncounted = testing::TempPath("uncounted.txt");
  std::ofstream(uncounted) << "conv.weight 8x3x3x3\n";
  EXPECT_EQ(ReadStateDictParameterCount(uncounted).status().code(), absl::StatusCode::kNotFound);
  const std::string garbled = testing::TempPath("garbled.txt");
  std::ofstream(garbled) << "# parameters: many\nconv.weight 8x3x3x3\n";
  EXPECT_EQ(ReadStateDictParameterCount(garbled).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ReadStateDictFixtureTest, RejectsMissingAndMalformedFiles) {
  EXPECT_EQ(ReadStateDictFixture("no/such/file.txt").status().code(), absl::StatusCode::kNotFound);
  const std::string path = testing::TempPath("bad.txt");
  std::ofstream(path) << "conv.weight 8x3x3x3\nlonely\n";
  EXPECT_EQ(ReadStateDictFixture(path).status().message(),
            path + ":2: \"lonely\" is not `<key> <shape>`");
  EXPECT_FALSE(StateDictMatchesFixture(*Parent(), "no/such/file.txt"));
}

}  // namespace
}  // namespace testing
}  // namespace pipeline
