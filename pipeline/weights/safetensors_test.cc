#include "pipeline/weights/safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/temp_path.h"
#include "pipeline/util/json_parser.h"
#include "pipeline/weights/state_dict_reader.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::TempPath;

std::string ReadBytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string LittleEndian64(uint64_t value) {
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>(value >> (8 * i)));
  return bytes;
}

std::string FloatBytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

// A file of `header` (padded as the format wants) and `data`.
std::string FileOf(std::string header, const std::string& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  return LittleEndian64(header.size()) + header + data;
}

// Tensors of every dtype the writer takes, names out of order.
NamedTensors MixedTensors() {
  return {
      {"b.weight", torch::arange(6, torch::kFloat).reshape({2, 3}) / 7},
      {"a.count", torch::tensor(int64_t{1} << 40)},
      {"c.half", torch::tensor({0.5, -2.0, 1.0 / 3.0}).to(torch::kHalf)},
      {"d.bf16", torch::tensor({3.0, 1e30}).to(torch::kBFloat16)},
      {"e.mask", torch::tensor({true, false, true})},
      {"f.bytes", torch::tensor({1, 255, 7}).to(torch::kByte)},
      {"g.double", torch::tensor({1.0 / 3.0}, torch::kDouble)},
      {"h.int", torch::tensor({-5, 6}, torch::kInt)},
      {"i.empty", torch::zeros({0, 4})},
  };
}

std::string Written(const NamedTensors& tensors, const std::string& name) {
  const std::string path = TempPath(name);
  const absl::Status status = WriteSafetensors(path, tensors);
  EXPECT_TRUE(status.ok()) << status;
  return path;
}

absl::StatusOr<NamedTensors> ReadFile(const std::string& path, const std::string& bytes) {
  WriteBytes(path, bytes);
  auto contents = ReadSafetensors(path);
  if (!contents.ok()) return contents.status();
  return std::move(contents->tensors);
}

// The reference library's own serialization tests (safetensors/src/tensor.rs):
// the exact bytes it writes.
TEST(SafetensorsTest, WritesTheReferenceLibrarysBytes) {
  const std::vector<float> values = {0, 1, 2, 3, 4, 5};
  const torch::Tensor data = torch::tensor(values);
  auto bytes = SafetensorsBytes({{"attn.0", data.reshape({1, 2, 3})}}, {});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, LittleEndian64(64) +
                        R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})" +
                        FloatBytes(values));
  // Seven spaces align the data to 8 bytes.
  bytes = SafetensorsBytes({{"attn0", data.reshape({1, 1, 2, 3})}}, {});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, LittleEndian64(72) +
                        R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})" +
                        "       " + FloatBytes(values));
  bytes = SafetensorsBytes({}, {{"framework", "pt"}});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, LittleEndian64(40) + R"({"__metadata__":{"framework":"pt"}})" + "     ");
}

TEST(SafetensorsTest, WrittenFileHasTheLayoutTheFormatGives) {
  const NamedTensors tensors = MixedTensors();
  auto bytes = SafetensorsBytes(tensors, {{"format", "pt"}});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ASSERT_GE(bytes->size(), 8u);
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes->data(), 8);
  EXPECT_EQ(header_size % 8, 0u);
  ASSERT_LE(8 + header_size, bytes->size());
  const std::string header = bytes->substr(8, header_size);
  // Compact JSON, then only the padding's spaces.
  const size_t json_end = header.rfind('}') + 1;
  EXPECT_EQ(header.substr(json_end), std::string(header_size - json_end, ' '));
  EXPECT_LT(header_size - json_end, 8u);
  EXPECT_EQ(header.find(' '), json_end);

  auto json = ParseJson(header);
  ASSERT_TRUE(json.ok()) << json.status();
  ASSERT_EQ(json->members.size(), tensors.size() + 1);
  EXPECT_EQ(json->members[0].first, "__metadata__");
  ASSERT_EQ(json->members[0].second.members.size(), 1u);
  EXPECT_EQ(json->members[0].second.members[0].first, "format");
  EXPECT_EQ(json->members[0].second.members[0].second.text, "pt");
  // Widest dtype first (the reference's order: I64, F64, F32, I32, BF16,
  // F16, U8, BOOL), then by name; back to back from 0, each aligned to its
  // element size.
  const std::vector<std::pair<std::string, std::string>> expected_order = {
      {"a.count", "I64"}, {"g.double", "F64"}, {"b.weight", "F32"},
      {"i.empty", "F32"}, {"h.int", "I32"},    {"d.bf16", "BF16"},
      {"c.half", "F16"},  {"f.bytes", "U8"},   {"e.mask", "BOOL"}};
  const std::string data = bytes->substr(8 + header_size);
  uint64_t offset = 0;
  for (size_t i = 0; i < expected_order.size(); ++i) {
    const auto& [name, entry] = json->members[i + 1];
    SCOPED_TRACE(name);
    EXPECT_EQ(name, expected_order[i].first);
    ASSERT_EQ(entry.members.size(), 3u);
    EXPECT_EQ(entry.members[0].first, "dtype");
    EXPECT_EQ(entry.members[0].second.text, expected_order[i].second);
    EXPECT_EQ(entry.members[1].first, "shape");
    EXPECT_EQ(entry.members[2].first, "data_offsets");
    const torch::Tensor* tensor = nullptr;
    for (const auto& [tensor_name, value] : tensors) {
      if (tensor_name == name) tensor = &value;
    }
    ASSERT_NE(tensor, nullptr);
    std::vector<int64_t> shape;
    for (const JsonValue& dim : entry.members[1].second.items) shape.push_back(*JsonUint64(dim));
    EXPECT_EQ(shape, tensor->sizes().vec());
    const auto& offsets = entry.members[2].second.items;
    ASSERT_EQ(offsets.size(), 2u);
    const uint64_t begin = *JsonUint64(offsets[0]), end = *JsonUint64(offsets[1]);
    EXPECT_EQ(begin, offset);
    EXPECT_EQ(end - begin, static_cast<uint64_t>(tensor->nbytes()));
    EXPECT_EQ((8 + header_size + begin) % tensor->element_size(), 0u);
    if (end > begin) {
      EXPECT_EQ(data.substr(begin, end - begin),
                std::string(static_cast<const char*>(tensor->data_ptr()), tensor->nbytes()));
    }
    offset = end;
  }
  EXPECT_EQ(offset, data.size());
}

TEST(SafetensorsTest, ReadsBackWhatItWrites) {
  const NamedTensors tensors = MixedTensors();
  const std::string path = Written(tensors, "mixed.safetensors");
  auto contents = ReadSafetensors(path);
  ASSERT_TRUE(contents.ok()) << contents.status();
  EXPECT_EQ(contents->metadata, (SafetensorsMetadata{{"format", "pt"}}));
  ASSERT_EQ(contents->tensors.size(), tensors.size());
  for (const auto& [name, expected] : tensors) {
    SCOPED_TRACE(name);
    bool found = false;
    for (const auto& [read_name, tensor] : contents->tensors) {
      if (read_name != name) continue;
      found = true;
      EXPECT_EQ(tensor.scalar_type(), expected.scalar_type());
      EXPECT_EQ(tensor.sizes(), expected.sizes());
      EXPECT_TRUE(tensor.equal(expected));
    }
    EXPECT_TRUE(found);
  }
}

TEST(SafetensorsTest, WriterRefusesWhatTheFormatCannotHold) {
  auto bytes = SafetensorsBytes({{"a", torch::zeros({2})}, {"a", torch::ones({2})}}, {});
  ASSERT_FALSE(bytes.ok());
  EXPECT_THAT(bytes.status().message(), HasSubstr("tensor \"a\": appears twice"));
  bytes = SafetensorsBytes({{"z", torch::zeros({2}, torch::kComplexFloat)}}, {});
  ASSERT_FALSE(bytes.ok());
  EXPECT_THAT(bytes.status().message(), HasSubstr("tensor \"z\": dtype ComplexFloat has no"));
  // A strided view is written as its values.
  const torch::Tensor matrix = torch::arange(6, torch::kFloat).reshape({2, 3});
  bytes = SafetensorsBytes({{"t", matrix.t()}}, {});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  WriteBytes(TempPath("strided.safetensors"), *bytes);
  auto read = ReadSafetensors(TempPath("strided.safetensors"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read->tensors[0].second.equal(matrix.t()));
}

// Written by tools/fixtures/safetensors_weights.py with Hugging Face's
// safetensors (0.5.2): save_file, then what load_file read back.
TEST(SafetensorsTest, ReadsAFileThePythonLibraryWrote) {
  const std::string fixture = "pipeline/weights/testdata/python_written";
  auto contents = ReadSafetensors(fixture + ".safetensors");
  ASSERT_TRUE(contents.ok()) << contents.status();
  std::ifstream expected_file(fixture + ".txt");
  ASSERT_TRUE(expected_file) << fixture << ".txt";
  SafetensorsMetadata expected_metadata;
  size_t index = 0;
  for (std::string line; std::getline(expected_file, line);) {
    std::vector<std::string> fields = absl::StrSplit(line, ' ');
    ASSERT_GE(fields.size(), 3u) << line;
    if (fields[0] == "metadata") {
      expected_metadata.emplace_back(fields[1],
                                     line.substr(fields[0].size() + fields[1].size() + 2));
      continue;
    }
    ASSERT_LT(index, contents->tensors.size());
    const auto& [name, tensor] = contents->tensors[index++];
    SCOPED_TRACE(name);
    EXPECT_EQ(name, fields[0]);
    const std::map<std::string, torch::ScalarType> dtypes = {{"F32", torch::kFloat},
                                                             {"F16", torch::kHalf},
                                                             {"BF16", torch::kBFloat16},
                                                             {"I64", torch::kLong}};
    ASSERT_TRUE(dtypes.count(fields[1])) << fields[1];
    EXPECT_EQ(tensor.scalar_type(), dtypes.at(fields[1]));
    std::vector<int64_t> shape;
    if (fields[2] != "scalar") {
      for (absl::string_view dim : absl::StrSplit(fields[2], ',')) {
        int64_t value = 0;
        ASSERT_TRUE(absl::SimpleAtoi(dim, &value)) << dim;
        shape.push_back(value);
      }
    }
    EXPECT_EQ(tensor.sizes().vec(), shape);
    ASSERT_EQ(static_cast<size_t>(tensor.numel()), fields.size() - 3);
    const torch::Tensor flat = tensor.flatten();
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      const std::string& text = fields[3 + i];
      if (tensor.scalar_type() == torch::kLong) {
        int64_t value = 0;
        ASSERT_TRUE(absl::SimpleAtoi(text, &value)) << text;
        EXPECT_EQ(flat[i].item<int64_t>(), value);
      } else {
        double value = 0;
        ASSERT_TRUE(absl::SimpleAtod(text, &value)) << text;
        const double read = flat[i].to(torch::kDouble).item<double>();
        EXPECT_EQ(read, value);
        EXPECT_EQ(std::signbit(read), std::signbit(value));
      }
    }
  }
  EXPECT_EQ(index, contents->tensors.size());
  EXPECT_EQ(contents->metadata.size(), expected_metadata.size());
  for (const auto& entry : expected_metadata) {
    EXPECT_NE(std::find(contents->metadata.begin(), contents->metadata.end(), entry),
              contents->metadata.end())
        << entry.first;
  }
}

struct BadFile {
  std::string what;
  std::string bytes;
  std::string message;  // expected within the error, after "<path>: "
};

std::vector<BadFile> BadFiles() {
  const std::string f32 = R"("dtype":"F32","shape":[2])";
  const std::string eight(8, '\0');
  return {
      {"too short", std::string("\x05\0\0", 3), "is 3 bytes, too short for a safetensors file"},
      {"huge header", LittleEndian64(100'000'001) + "{}",
       "says 100000001 bytes, more than safetensors allows"},
      {"header past the end", LittleEndian64(64) + "{}", "says 64 bytes, but only 2 follow"},
      {"invalid JSON", FileOf(R"({"a":{)", ""),
       "header: invalid JSON at byte 8: expected a member name"},
      {"not an object", FileOf("[1, 2]", ""), "header: is an array, not a JSON object"},
      {"no tensors", FileOf(R"({"__metadata__":{"format":"pt"}})", ""), "holds no tensors"},
      {"duplicate name",
       FileOf(R"({"a":{)" + f32 + R"(,"data_offsets":[0,8]},"a":{)" + f32 +
                  R"(,"data_offsets":[8,16]}})",
              eight + eight),
       "header: \"a\" appears twice"},
      {"unknown dtype", FileOf(R"({"a":{"dtype":"F33","shape":[],"data_offsets":[0,4]}})", "1234"),
       "header: tensor \"a\": unknown dtype \"F33\""},
      {"unsigned dtype", FileOf(R"({"a":{"dtype":"U32","shape":[],"data_offsets":[0,4]}})", "1234"),
       "header: tensor \"a\": dtype U32 has no LibTorch counterpart"},
      {"negative dim", FileOf(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "1234"),
       "tensor \"a\": \"shape\" holds -1, not an integer from 0 to 9223372036854775807"},
      {"fractional dim",
       FileOf(R"({"a":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})", "1234"),
       "tensor \"a\": \"shape\" holds 1.0, not an integer"},
      {"three offsets", FileOf(R"({"a":{)" + f32 + R"(,"data_offsets":[0,4,8]}})", eight),
       "tensor \"a\": \"data_offsets\" holds 3 numbers, not 2"},
      {"missing field", FileOf(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", "1234"),
       "tensor \"a\": has no \"shape\""},
      {"unknown field", FileOf(R"({"a":{)" + f32 + R"(,"data_offsets":[0,8],"x":1}})", eight),
       "tensor \"a\": unknown field \"x\""},
      {"entry not an object", FileOf(R"({"a":[0,8]})", eight), "tensor \"a\": is an array"},
      {"metadata not strings",
       FileOf(R"({"__metadata__":{"n":1},"a":{)" + f32 + R"(,"data_offsets":[0,8]}})", eight),
       "\"__metadata__\" \"n\" is a number, not a string"},
      {"gap at the start",
       FileOf(R"({"a":{)" + f32 + R"(,"data_offsets":[4,12]}})", "1234" + eight),
       "tensor \"a\": data_offsets [4, 12] leave a gap after the start of the data"},
      {"overlap",
       FileOf(R"({"a":{)" + f32 + R"(,"data_offsets":[0,8]},"b":{)" + f32 +
                  R"(,"data_offsets":[4,12]}})",
              eight + "1234"),
       "tensor \"b\": data_offsets [4, 12] overlap tensor \"a\", which ends at 8"},
      {"reversed offsets",
       FileOf(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", eight),
       "tensor \"a\": data_offsets [8, 0] end before they begin"},
      {"span differs from shape",
       FileOf(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight),
       "tensor \"a\": data_offsets [0, 8] span 8 bytes, but shape [3] of F32 needs 12"},
      {"bytes left over", FileOf(R"({"a":{)" + f32 + R"(,"data_offsets":[0,8]}})", eight + "xy"),
       "the tensors fill 8 bytes of data, but 10 follow the header"},
      {"data cut short", FileOf(R"({"a":{)" + f32 + R"(,"data_offsets":[0,8]}})", "1234"),
       "tensor \"a\": data_offsets [0, 8] run past the end of the data, which has 4 bytes"},
      {"element count overflows",
       FileOf(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
              eight),
       "tensor \"a\": shape [4294967296, 4294967296] has more elements than 64 bits count"},
      {"byte count overflows",
       FileOf(R"({"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}})", eight),
       "needs more bytes than 64 bits count"},
      {"bool neither 0 nor 1",
       FileOf(R"({"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})",
              std::string("\x01\x02", 2)),
       "tensor \"a\": BOOL element 1 is 2, neither 0 nor 1"},
  };
}

TEST(SafetensorsTest, EveryBrokenFileIsAnErrorNamingTheFileTensorAndProblem) {
  for (const BadFile& bad : BadFiles()) {
    SCOPED_TRACE(bad.what);
    const std::string path = TempPath("bad.safetensors");
    auto tensors = ReadFile(path, bad.bytes);
    ASSERT_FALSE(tensors.ok());
    EXPECT_EQ(tensors.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(tensors.status().message()), StartsWith(path + ": "));
    EXPECT_THAT(tensors.status().message(), HasSubstr(bad.message));
  }
  EXPECT_EQ(ReadSafetensors(TempPath("no_such.safetensors")).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(SafetensorsTest, TheHeaderMayCarrySurroundingWhitespaceAndNullMetadata) {
  const std::string data = FloatBytes({1.5f, -2.0f});
  auto tensors = ReadFile(
      TempPath("spaced.safetensors"),
      FileOf("\n {\"__metadata__\": null, \"a\": {\"data_offsets\": [0, 8], \"shape\": [2], "
             "\"dtype\": \"F32\"}}\t ",
             data));
  ASSERT_TRUE(tensors.ok()) << tensors.status();
  EXPECT_TRUE(tensors->at(0).second.equal(torch::tensor({1.5f, -2.0f})));
}

// Every prefix of a good file, as a copy cut short leaves it.
TEST(SafetensorsTest, EveryTruncationIsAnError) {
  const std::string bytes = ReadBytes(Written(
      {{"w", torch::randn({3, 2})}, {"n", torch::tensor(int64_t{7})}}, "whole.safetensors"));
  const std::string path = TempPath("cut.safetensors");
  for (size_t size = 0; size < bytes.size(); ++size) {
    auto tensors = ReadFile(path, bytes.substr(0, size));
    ASSERT_FALSE(tensors.ok()) << size << " bytes";
    EXPECT_THAT(std::string(tensors.status().message()), StartsWith(path + ": "))
        << size << " bytes";
  }
}

// A bounded, deterministic sweep in the spirit of the fuzz target
// (tests/fuzz/safetensors_reader_fuzz.cc): every header byte replaced by
// values that matter to JSON and to numbers. Each read ends in a status,
// and what is read is what the header describes.
TEST(SafetensorsTest, MutatedHeadersNeverCrashAndAlwaysGiveAStatus) {
  const std::string bytes = ReadBytes(Written({{"weight", torch::randn({2, 2})},
                                               {"count", torch::tensor(int64_t{3})},
                                               {"half", torch::ones({3}, torch::kHalf)}},
                                              "sweep.safetensors"));
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  const std::string path = TempPath("mutated.safetensors");
  const char kValues[] = {'\0', '"', '{', ']', ',', ':', '9', ' ', '\xff'};
  int accepted = 0;
  for (size_t at = 0; at < 8 + header_size; ++at) {
    for (const char value : kValues) {
      std::string mutated = bytes;
      if (mutated[at] == value) continue;
      mutated[at] = value;
      auto tensors = ReadFile(path, mutated);
      if (!tensors.ok()) {
        EXPECT_THAT(std::string(tensors.status().message()), StartsWith(path + ": ")) << at;
        continue;
      }
      ++accepted;
      int64_t total = 0;
      for (const auto& [name, tensor] : *tensors) {
        ASSERT_TRUE(tensor.defined()) << name;
        total += tensor.nbytes();
      }
      EXPECT_EQ(static_cast<uint64_t>(total), bytes.size() - 8 - header_size) << at;
    }
  }
  // Spaces in the padding or between tokens keep the file valid; most
  // changes do not.
  EXPECT_GT(accepted, 0);
}

TEST(SafetensorsTest, IsChosenByContentWithTheExtensionAsFallback) {
  const NamedTensors tensors = {{"w", torch::arange(4, torch::kFloat)}};
  // Safetensors content under a .pt name is read as safetensors.
  const std::string misnamed = TempPath("really_safetensors.pt");
  ASSERT_TRUE(WriteSafetensors(misnamed, tensors).ok());
  EXPECT_TRUE(IsSafetensorsFile(misnamed));
  auto read = ReadStateDict(misnamed);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read->at(0).second.equal(tensors[0].second));
  // A header of 19280 bytes makes a length whose first bytes are "PK", as a
  // zip's are: the header's '{' still tells.
  std::string header = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  header.resize(19280, ' ');
  const std::string pk = TempPath("pk_length.safetensors.bin");
  WriteBytes(pk, FileOf(header, FloatBytes({2.5f})));
  ASSERT_EQ(ReadBytes(pk).substr(0, 2), "PK");
  EXPECT_TRUE(IsSafetensorsFile(pk));
  read = ReadStateDict(pk);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read->at(0).second.equal(torch::tensor({2.5f})));
  // A torch.save zip under a .safetensors name is read as torch.save.
  const std::string zip = TempPath("really_zip.safetensors");
  ASSERT_TRUE(WriteStateDict(zip, tensors).ok());
  EXPECT_FALSE(IsSafetensorsFile(zip));
  read = ReadStateDict(zip);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read->at(0).second.equal(tensors[0].second));
  // Neither: the extension picks whose error is given.
  const std::string short_file = TempPath("short.safetensors");
  WriteBytes(short_file, "abc");
  EXPECT_TRUE(IsSafetensorsFile(short_file));
  EXPECT_THAT(ReadStateDict(short_file).status().message(),
              HasSubstr("too short for a safetensors file"));
  const std::string short_pt = TempPath("short.pt");
  WriteBytes(short_pt, "abc");
  EXPECT_FALSE(IsSafetensorsFile(short_pt));
  EXPECT_THAT(ReadStateDict(short_pt).status().message(), HasSubstr("is not a torch.save file"));
}

}  // namespace
}  // namespace pipeline
