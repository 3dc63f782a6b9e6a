// Runs //tools:prepare_data as a user would and reads back what it wrote.

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/image/idx_reader.h"
#include "pipeline/image/image_codec.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kSource[] = "/usr/share/datasets/fashion-mnist";

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// `environment` is prepended to the command line ("NAME=value ").
Result RunTool(const std::string& flags, const std::string& environment = "") {
  // Tests run in the runfiles tree, where the data dependency lives.
  const std::string command = environment + "tools/prepare_data " + flags + " 2>&1";
  Result result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

fs::path TempFolder(const std::string& name) {
  const fs::path folder = fs::path(::testing::TempDir()) / ("prepare_data_" + name);
  fs::remove_all(folder);
  return folder;
}

std::vector<std::string> SortedNames(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

TEST(PrepareDataTest, WritesASmallTreeThatDecodesToTheSourcePixels) {
  const fs::path out = TempFolder("small");
  const Result result =
      RunTool("--output=" + out.string() + " --classes=Trouser,Bag --limit_per_class=5");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output, "prepare_data: wrote 10 train and 10 validation images (2 classes, "
                           "28x28x1 png) to " + out.string() + "\n");
  EXPECT_THAT(SortedNames(out), ElementsAre("train", "validation"));

  auto images = ReadIdxImages(std::string(kSource) + "/train-images-idx3-ubyte.gz");
  auto labels = ReadIdxLabels(std::string(kSource) + "/train-labels-idx1-ubyte.gz");
  ASSERT_TRUE(images.ok() && labels.ok());
  for (const std::string split : {"train", "validation"}) {
    EXPECT_THAT(SortedNames(out / split), ElementsAre("Bag", "Trouser")) << split;
    for (const std::string class_name : {"Bag", "Trouser"}) {
      const std::vector<std::string> files = SortedNames(out / split / class_name);
      ASSERT_EQ(files.size(), 5u) << split << "/" << class_name;
      for (const std::string& file : files) {
        EXPECT_THAT(file, ::testing::EndsWith(".png"));
        auto image = DecodeImage(ReadFile(out / split / class_name / file), file);
        ASSERT_TRUE(image.ok()) << image.status();
        EXPECT_EQ(image->ShapeString(), "28x28x1");
        if (split != "train") continue;
        // The file name is the sample's index in the idx file.
        const int64_t index = std::stoll(file);
        EXPECT_EQ(int{(*labels)[index]}, class_name == "Bag" ? 8 : 1) << file;
        const auto first = images->pixels.begin() + 784 * index;
        EXPECT_TRUE(std::equal(image->u8.begin(), image->u8.end(), first)) << file;
      }
    }
  }
  // The first five trousers of the training set, in the idx file's order.
  std::vector<std::string> expected;
  for (int64_t i = 0; expected.size() < 5; ++i) {
    if ((*labels)[i] == 1) {
      std::string name = std::to_string(i);
      expected.push_back(std::string(5 - name.size(), '0') + name + ".png");
    }
  }
  EXPECT_EQ(SortedNames(out / "train/Trouser"), expected);

  // The image_folder dataset reads the tree back.
  auto dataset = testing::CreatePlugin<Dataset>(
      "name: \"image_folder\" options { [type.googleapis.com/pipeline.ImageFolderOptions] { "
      "root: \"" + (out / "validation").string() + "\" } }");
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_THAT((*dataset)->class_names(), ElementsAre("Bag", "Trouser"));
  EXPECT_EQ((*dataset)->size(), 10);
}

TEST(PrepareDataTest, RefusesToMixWithAnEarlierRunUnlessOverwriting) {
  const fs::path out = TempFolder("rerun");
  ASSERT_EQ(RunTool("--output=" + out.string() + " --classes=Bag --limit_per_class=3").exit_code,
            0);
  const Result again = RunTool("--output=" + out.string() + " --classes=Coat --limit_per_class=2");
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_EQ(again.output, "prepare_data: --output: " + (out / "train").string() +
                              " already holds files (from an earlier run?); pass --overwrite "
                              "to replace them, or choose another --output\n");
  EXPECT_THAT(SortedNames(out / "train"), ElementsAre("Bag"));  // untouched

  const Result overwrite = RunTool("--output=" + out.string() +
                                   " --classes=Coat --limit_per_class=2 --overwrite");
  ASSERT_EQ(overwrite.exit_code, 0) << overwrite.output;
  EXPECT_THAT(SortedNames(out / "train"), ElementsAre("Coat"));
  EXPECT_EQ(SortedNames(out / "validation/Coat").size(), 2u);
}

TEST(PrepareDataTest, JpegRgbResized) {
  const fs::path out = TempFolder("jpeg");
  const Result result = RunTool("--output=" + out.string() +
                                " --classes=Sandal --limit_per_class=2 --format=jpeg "
                                "--jpeg_quality=80 --rgb --size=32");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("(1 class, 32x32x3 jpeg)"));
  for (const std::string& file : SortedNames(out / "train/Sandal")) {
    EXPECT_THAT(file, ::testing::EndsWith(".jpg"));
    auto image = DecodeImage(ReadFile(out / "train/Sandal" / file), file);
    ASSERT_TRUE(image.ok()) << image.status();
    EXPECT_EQ(image->ShapeString(), "32x32x3");
  }
}

TEST(PrepareDataTest, RelativeOutputIsTakenFromTheBazelRunFolder) {
  const fs::path base = TempFolder("relative");
  fs::create_directories(base);
  const Result result = RunTool("--output=data/fm --classes=Dress --limit_per_class=1",
                                "BUILD_WORKING_DIRECTORY=" + base.string() + " ");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(SortedNames(base / "data/fm/train/Dress").size(), 1u);
}

TEST(PrepareDataTest, UnknownClassFailsWithTheList) {
  const fs::path out = TempFolder("bogus");
  const Result result = RunTool("--output=" + out.string() + " --classes=Bogus");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.output,
            "prepare_data: --classes: unknown class \"Bogus\"; valid: T-shirt_top, Trouser, "
            "Pullover, Dress, Coat, Sandal, Shirt, Sneaker, Bag, Ankle_boot.\n");
  EXPECT_FALSE(fs::exists(out));  // nothing written
}

TEST(PrepareDataTest, OtherErrorsAreOneLineWithExitCode2) {
  const fs::path out = TempFolder("errors");
  for (const auto& [flags, message] : std::vector<std::pair<std::string, std::string>>{
           {"--format=gif", "--format: \"gif\" is not supported; use png or jpeg"},
           {"--format=jpeg --jpeg_quality=0", "--jpeg_quality: 0 is outside 1..100"},
           {"--size=-1", "--size: -1 must be 0 (keep 28x28) or 1..1024"},
           {"--limit_per_class=-5", "--limit_per_class: -5 is negative; use 0 for all images"},
           {"--classes=bag", "Did you mean \"Bag\"?"},
           {"--source=/no/such", "--source: folder /no/such does not exist; install the "
                                 "dataset-fashion-mnist package"},
       }) {
    const Result result = RunTool("--output=" + out.string() + " " + flags);
    EXPECT_EQ(result.exit_code, 2) << flags;
    EXPECT_THAT(result.output, StartsWith("prepare_data: ")) << flags;
    EXPECT_THAT(result.output, HasSubstr(message)) << flags;
    EXPECT_EQ(std::count(result.output.begin(), result.output.end(), '\n'), 1) << result.output;
  }
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace pipeline
