#include "pipeline/image/jpeg_corpus.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/image/image_codec.h"
#include "pipeline/interfaces/image.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;

// A photo-sized source with structure at every scale.
std::string SourceJpeg() {
  Image image;
  image.height = 1200;
  image.width = 1600;
  image.channels = 3;
  image.u8.resize(1200 * 1600 * 3);
  for (int y = 0; y < image.height; ++y) {
    for (int x = 0; x < image.width; ++x) {
      uint8_t* p = &image.u8[(static_cast<size_t>(y) * image.width + x) * 3];
      p[0] = static_cast<uint8_t>(x * 255 / image.width);
      p[1] = static_cast<uint8_t>((x ^ y) & 0xff);
      p[2] = static_cast<uint8_t>(y * 255 / image.height);
    }
  }
  return EncodeJpeg(image, 90).value();
}

TEST(JpegCorpusTest, WritesDecodableCropsAtTheRequestedSize) {
  const fs::path root = fs::path(::testing::TempDir()) / "jpeg_corpus";
  fs::remove_all(root);
  fs::create_directories(root / "photos");
  std::ofstream(root / "photos" / "a.jpg", std::ios::binary) << SourceJpeg();
  JpegCorpusOptions options;
  options.source_dir = (root / "photos").string();
  options.output_dir = (root / "out").string();
  options.images_per_class = 6;
  absl::StatusOr<int> written = MakeJpegCorpus(options);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(*written, 12);
  int portrait = 0;
  for (const char* name : {"cat", "dog"}) {
    for (int i = 0; i < 6; ++i) {
      const fs::path path = root / "out" / name / (std::to_string(i) + ".jpg");
      std::ifstream file(path, std::ios::binary);
      std::stringstream bytes;
      bytes << file.rdbuf();
      absl::StatusOr<Image> image = DecodeImage(bytes.str(), path.string());
      ASSERT_TRUE(image.ok()) << image.status();
      EXPECT_EQ(image->channels, 3);
      EXPECT_EQ(image->height * image->width, 500 * 375) << path;
      portrait += image->height > image->width;
    }
  }
  EXPECT_LT(portrait, 12);
}

TEST(JpegCorpusTest, MissingSourcesSayHowToGetThem) {
  JpegCorpusOptions options;
  options.source_dir = "/no/such/photos";
  options.output_dir = ::testing::TempDir() + "/unused";
  absl::StatusOr<int> written = MakeJpegCorpus(options);
  ASSERT_FALSE(written.ok());
  EXPECT_THAT(std::string(written.status().message()),
              ::testing::HasSubstr("apt-get install mate-backgrounds"));
}

}  // namespace
}  // namespace pipeline
