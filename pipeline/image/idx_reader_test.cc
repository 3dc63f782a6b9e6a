#include "pipeline/image/idx_reader.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

std::string Header(uint32_t magic, std::vector<uint32_t> sizes) {
  std::string bytes;
  for (uint32_t v : [&] {
         std::vector<uint32_t> all{magic};
         all.insert(all.end(), sizes.begin(), sizes.end());
         return all;
       }()) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>(v >> shift));
  }
  return bytes;
}

TEST(IdxReaderTest, ParsesImages) {
  std::string bytes = Header(0x803, {2, 2, 3}) + std::string("\x01\x02\x03\x04\x05\x06"
                                                             "\x07\x08\x09\x0a\x0b\x0c", 12);
  auto images = ParseIdxImages(bytes, "x");
  ASSERT_TRUE(images.ok()) << images.status();
  EXPECT_EQ(images->count, 2);
  EXPECT_EQ(images->rows, 2);
  EXPECT_EQ(images->cols, 3);
  EXPECT_EQ(images->pixels[7], 8);
}

TEST(IdxReaderTest, RejectsWrongMagic) {
  auto images = ParseIdxImages(Header(0x801, {1, 1, 1}) + "a", "labels.idx");
  EXPECT_EQ(images.status().message(),
            "labels.idx: not an idx images file: magic number 0x00000801, expected 0x00000803");
}

TEST(IdxReaderTest, RejectsTruncatedData) {
  auto images = ParseIdxImages(Header(0x803, {2, 28, 28}) + std::string(100, 'a'), "f");
  EXPECT_THAT(images.status().message(),
              HasSubstr("header promises 2 images of 28x28 (1568 bytes) but the file holds 100"));
  auto labels = ParseIdxLabels(Header(0x801, {5}) + "ab", "l");
  EXPECT_THAT(labels.status().message(), HasSubstr("header promises 5 labels but the file holds 2"));
}

TEST(IdxReaderTest, RejectsShortHeader) {
  EXPECT_THAT(ParseIdxLabels("abc", "l").status().message(),
              HasSubstr("l: not an idx labels file: only 3 bytes"));
}

TEST(IdxReaderTest, MissingFileIsNotFound) {
  auto bytes = ReadMaybeGzippedFile("/nonexistent/file.gz");
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(bytes.status().message(), HasSubstr("/nonexistent/file.gz: cannot open"));
}

}  // namespace
}  // namespace pipeline
