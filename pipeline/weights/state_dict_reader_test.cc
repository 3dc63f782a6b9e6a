#include "pipeline/weights/state_dict_reader.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "caffe2/serialize/inline_container.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/checkpoint/checkpoint.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/testing/temp_path.h"
#include "pipeline/testing/tiny_models.h"
#include "torch/nn/modules/linear.h"
#include "torch/optim/adam.h"
#include "torch/optim/adamw.h"
#include "torch/optim/sgd.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

// Written by tools/fixtures/small_cnn_weights.py.
std::string Fixture(const std::string& name) {
  return "pipeline/weights/testdata/small_cnn_" + name + ".pt";
}

using testing::TempPath;

std::string ReadBytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::vector<std::string> Names(const NamedTensors& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : tensors) names.push_back(name);
  return names;
}

void ExpectSameTensors(const NamedTensors& actual, const NamedTensors& expected) {
  ASSERT_EQ(Names(actual), Names(expected));
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(actual[i].second.scalar_type(), expected[i].second.scalar_type()) << actual[i].first;
    EXPECT_TRUE(actual[i].second.equal(expected[i].second)) << actual[i].first;
  }
}

TEST(StateDictReaderTest, ReadsPythonsOrderedDictInItsOrder) {
  auto tensors = ReadStateDict(Fixture("state_dict"));
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  const std::vector<std::string> expected = {"stages.0.conv.weight",
                                             "stages.0.bn.weight",
                                             "stages.0.bn.bias",
                                             "stages.0.bn.running_mean",
                                             "stages.0.bn.running_var",
                                             "stages.0.bn.num_batches_tracked",
                                             "stages.1.conv.weight",
                                             "stages.1.bn.weight",
                                             "stages.1.bn.bias",
                                             "stages.1.bn.running_mean",
                                             "stages.1.bn.running_var",
                                             "stages.1.bn.num_batches_tracked",
                                             "fc.weight",
                                             "fc.bias"};
  EXPECT_EQ(Names(*tensors), expected);
  const torch::Tensor& conv = (*tensors)[0].second;
  EXPECT_EQ(conv.sizes().vec(), (std::vector<int64_t>{4, 1, 3, 3}));
  EXPECT_EQ(conv.scalar_type(), torch::kFloat32);
  const torch::Tensor& tracked = (*tensors)[5].second;
  EXPECT_EQ(tracked.dim(), 0);
  EXPECT_EQ(tracked.scalar_type(), torch::kInt64);
  EXPECT_EQ(tracked.item<int64_t>(), 12);
  EXPECT_EQ((*tensors)[12].second.sizes().vec(), (std::vector<int64_t>{3, 8}));
}

TEST(StateDictReaderTest, PlainAndNestedDictsGiveTheSameTensors) {
  auto reference = ReadStateDict(Fixture("state_dict"));
  ASSERT_TRUE(reference.ok()) << reference.status();
  for (const char* name : {"plain_dict", "nested", "model_key"}) {
    SCOPED_TRACE(name);
    auto tensors = ReadStateDict(Fixture(name));
    ASSERT_TRUE(tensors.ok()) << tensors.status();
    ExpectSameTensors(*tensors, *reference);
  }
}

TEST(StateDictReaderTest, KeepsTheFilesDtype) {
  auto tensors = ReadStateDict(Fixture("double"));
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  EXPECT_EQ((*tensors)[0].second.scalar_type(), torch::kFloat64);
  EXPECT_EQ((*tensors)[5].second.scalar_type(), torch::kInt64);
}

TEST(StateDictReaderTest, RejectsALegacyFileWithTheWayOut) {
  const std::string path = Fixture("legacy");
  auto tensors = ReadStateDict(path);
  ASSERT_FALSE(tensors.ok());
  EXPECT_EQ(tensors.status().message(),
            path +
                ": is in torch.save's legacy (pre-1.6) format; load and save it again in "
                "Python with torch.save(torch.load(path), new_path) to get the zip format");
}

TEST(StateDictReaderTest, RejectsAPickleThatIsNotAStateDict) {
  const std::string path = Fixture("not_a_state_dict");
  auto tensors = ReadStateDict(path);
  ASSERT_FALSE(tensors.ok());
  EXPECT_EQ(tensors.status().message(),
            path + ": holds a list, not a state dict (a dict of tensors)");
}

TEST(StateDictReaderTest, RejectsADictThatHoldsItself) {
  const std::string path = Fixture("self_nested");
  auto tensors = ReadStateDict(path);
  ASSERT_FALSE(tensors.ok());
  EXPECT_EQ(tensors.status().message(),
            path + ": nests \"state_dict\"/\"model\" dicts more than 4 deep");
}

TEST(StateDictReaderTest, RejectsAMissingFile) {
  auto tensors = ReadStateDict("no/such/weights.pt");
  ASSERT_FALSE(tensors.ok());
  EXPECT_EQ(tensors.status().message(), "no/such/weights.pt: cannot open the file");
}

TEST(StateDictReaderTest, RejectsGarbage) {
  const std::string path = TempPath("garbage.pt");
  std::mt19937 random(1);
  std::string bytes(5000, '\0');
  for (char& c : bytes) c = static_cast<char>(random());
  WriteBytes(path, bytes);
  auto tensors = ReadStateDict(path);
  ASSERT_FALSE(tensors.ok());
  EXPECT_THAT(tensors.status().message(),
              HasSubstr(path + ": is not a torch.save file nor a checkpoint"));
}

// Every cut of the file, from a few bytes to all but the last, is an error
// naming the file, never a crash or a silently shorter state dict.
TEST(StateDictReaderTest, RejectsEveryTruncation) {
  const std::string bytes = ReadBytes(Fixture("nested"));
  ASSERT_GT(bytes.size(), 1000u);
  const std::string path = TempPath("truncated.pt");
  for (size_t size = 0; size < bytes.size(); size += 61) {
    SCOPED_TRACE(size);
    WriteBytes(path, bytes.substr(0, size));
    auto tensors = ReadStateDict(path);
    ASSERT_FALSE(tensors.ok());
    EXPECT_THAT(tensors.status().message(), HasSubstr(path + ": "));
  }
}

// The archive with one record cut to half its length: inside a valid zip,
// so the unpickler and the storage check, not the zip reader, must notice.
std::string WithRecordCut(const std::string& name, const std::string& cut_record) {
  const std::string path = TempPath(name);
  caffe2::serialize::PyTorchStreamReader reader(Fixture("state_dict"));
  caffe2::serialize::PyTorchStreamWriter writer(path);
  for (const std::string& record : reader.getAllRecords()) {
    if (record == "version") continue;  // the writer adds its own
    auto [data, size] = reader.getRecord(record);
    writer.writeRecord(record, data.get(), record == cut_record ? size / 2 : size);
  }
  writer.writeEndOfFile();
  return path;
}

TEST(StateDictReaderTest, RejectsAPickleCutShort) {
  const std::string path = WithRecordCut("short_pickle.pt", "data.pkl");
  auto cut = ReadStateDict(path);
  ASSERT_FALSE(cut.ok());
  EXPECT_THAT(cut.status().message(), HasSubstr(path + ": "));
  EXPECT_THAT(cut.status().message(), HasSubstr("truncated"));
}

TEST(StateDictReaderTest, RejectsAStorageCutShort) {
  const std::string path = WithRecordCut("short_storage.pt", "data/0");
  auto cut = ReadStateDict(path);
  ASSERT_FALSE(cut.ok());
  EXPECT_THAT(cut.status().message(), HasSubstr(path + ": data.pkl byte "));
  EXPECT_THAT(cut.status().message(),
              HasSubstr(": storage 0 holds 72 bytes, not the 36 elements of torch.FloatStorage its "
                        "tensors need (truncated?)"));
}

TEST(StateDictReaderTest, WrittenStateDictReadsBack) {
  auto tensors = ReadStateDict(Fixture("state_dict"));
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  const std::string path = TempPath("written.pt");
  ASSERT_TRUE(WriteStateDict(path, *tensors).ok());
  auto again = ReadStateDict(path);
  ASSERT_TRUE(again.ok()) << again.status();
  ExpectSameTensors(*again, *tensors);
}

TEST(StateDictReaderTest, ReadsTheTrainersCheckpoints) {
  testing::TinyModel model(4, 2);
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  const std::string path = TempPath("checkpoint.pt");
  CheckpointContents contents{/*epoch=*/3, /*step=*/120, {"cat", "dog"}, "trainer { epochs: 3 }"};
  ASSERT_TRUE(WriteCheckpoint(path, model, optimizer, contents).ok());

  auto tensors = ReadStateDict(path);
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  ExpectSameTensors(*tensors, {{"fc.weight", model.named_parameters()["fc.weight"]},
                               {"fc.bias", model.named_parameters()["fc.bias"]}});

  auto loaded = ReadCheckpoint(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->contents.epoch, 3);
  EXPECT_EQ(loaded->contents.step, 120);
  EXPECT_EQ(loaded->contents.class_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(loaded->contents.resolved_config, "trainer { epochs: 3 }");
}

// The class sources of every optimizer's saved state (tuples of betas,
// step counts, per-parameter tensors) pass the check ReadCheckpoint makes
// before LibTorch imports them.
TEST(StateDictReaderTest, CheckpointsOfEveryOptimizerAfterAStepReadBack) {
  testing::TinyModel model(4, 2);
  std::vector<std::unique_ptr<torch::optim::Optimizer>> optimizers;
  optimizers.push_back(std::make_unique<torch::optim::SGD>(
      model.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true)));
  optimizers.push_back(std::make_unique<torch::optim::Adam>(
      model.parameters(), torch::optim::AdamOptions(0.01).amsgrad(true)));
  optimizers.push_back(std::make_unique<torch::optim::AdamW>(model.parameters(),
                                                             torch::optim::AdamWOptions(0.01)));
  for (size_t i = 0; i < optimizers.size(); ++i) {
    optimizers[i]->zero_grad();
    model.forward(torch::ones({2, 4})).sum().backward();
    optimizers[i]->step();
    const std::string path = TempPath(absl::StrCat("optimizer_", i, ".pt"));
    CheckpointContents contents;
    contents.rng_state = torch::ones({8}, torch::kUInt8);
    ASSERT_TRUE(WriteCheckpoint(path, model, *optimizers[i], contents).ok());
    auto loaded = ReadCheckpoint(path);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(loaded->model.size(), 2u);
    EXPECT_TRUE(RestoreOptimizerState(path, *optimizers[i]).ok());
  }
}

// LibTorch's TorchScript importer segfaults on this one-letter change to a
// class definition in the archive (found by tests/fuzz); the archive does
// not check its records' CRCs, so only our check stands in between.
TEST(StateDictReaderTest, ReadCheckpointRejectsDamagedClassSourcesWithoutCrashing) {
  testing::TinyModel model(4, 2);
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.1));
  const std::string path = TempPath("damaged_code.pt");
  ASSERT_TRUE(WriteCheckpoint(path, model, optimizer, CheckpointContents{}).ok());
  std::filesystem::remove(ChecksumPathOf(path));
  std::string bytes = ReadBytes(path);
  const size_t at = bytes.find("  __buffers__ = []");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 18, "  __buffjrs__ = []");
  WriteBytes(path, bytes);

  auto loaded = ReadCheckpoint(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(),
              HasSubstr(path + ": is not a checkpoint written by train"));
  EXPECT_THAT(loaded.status().message(),
              HasSubstr("is not an attribute declaration train writes: \"  __buffjrs__ = []\""));
  EXPECT_FALSE(ReadStateDict(path).ok());
  EXPECT_FALSE(RestoreOptimizerState(path, optimizer).ok());
}

TEST(StateDictReaderTest, ReadCheckpointRejectsAStateDictFile) {
  auto loaded = ReadCheckpoint(Fixture("state_dict"));
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(),
              HasSubstr(Fixture("state_dict") + ": is not a checkpoint written by train"));
}

}  // namespace
}  // namespace pipeline
