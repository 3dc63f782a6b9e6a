// Runs //tools:prepare_data as a user would and reads back what it wrote.

#include <sys/wait.h>
#include <zlib.h>

#include <algorithm>
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

Result RunShell(const std::string& command) {
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

// `environment` is prepended to the command line ("NAME=value ").
Result RunTool(const std::string& flags, const std::string& environment = "") {
  // Tests run in the runfiles tree, where the data dependency lives.
  return RunShell(environment + "tools/prepare_data " + flags + " 2>&1");
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
           {"--format=webdataset", "--format: webdataset is a layout, not an image format; use "
                                   "--layout=webdataset"},
           {"--layout=zip", "--layout: \"zip\" is not supported; use image_folder or webdataset"},
           {"--layout=webdataset --shard_size_mb=0", "--shard_size_mb: 0 is outside 1..1048576"},
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

// ---- --layout=webdataset ----------------------------------------------------

// Each member of the tars, as Python's tarfile reads them: path, name, size,
// CRC-32 of the data, the text of a .cls member ("-" for others), mode,
// mtime, type.
constexpr char kListMembers[] =
    "import sys, tarfile, zlib\n"
    "for path in sys.argv[1:]:\n"
    "    with tarfile.open(path) as tar:\n"
    "        for m in tar:\n"
    "            data = tar.extractfile(m).read()\n"
    "            text = data.decode() if m.name.endswith('.cls') else '-'\n"
    "            print(path, m.name, m.size, zlib.crc32(data), text, oct(m.mode), m.mtime,\n"
    "                  m.type.decode())\n";

std::vector<std::vector<std::string>> PythonTarMembers(const fs::path& script,
                                                       const std::vector<std::string>& tars) {
  std::ofstream(script) << kListMembers;
  std::string command = "python3 " + script.string();
  for (const std::string& tar : tars) command += " " + tar;
  const Result result = RunShell(command + " 2>&1");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(result.output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::vector<std::string> row;
    for (std::string field; fields >> field;) row.push_back(field);
    rows.push_back(row);
  }
  return rows;
}

TEST(PrepareDataTest, WebDatasetShardsReadBackAsWrittenAndAsPythonsTarfileReadsThem) {
  const fs::path out = TempFolder("webdataset");
  const std::string flags = " --layout=webdataset --classes=Trouser,Bag --limit_per_class=300 "
                            "--shard_size_mb=1";
  const Result result = RunTool("--output=" + out.string() + flags);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output, "prepare_data: wrote 600 train and 600 validation images (2 classes, "
                           "28x28x1 png) as 2 + 2 webdataset shards to " + out.string() + "\n");
  EXPECT_THAT(SortedNames(out),
              ElementsAre("classes.txt", "train-000000.tar", "train-000000.tar.idx",
                          "train-000001.tar", "train-000001.tar.idx", "validation-000000.tar",
                          "validation-000000.tar.idx", "validation-000001.tar",
                          "validation-000001.tar.idx"));
  EXPECT_EQ(ReadFile(out / "classes.txt"), "Trouser\nBag\n");
  for (const std::string shard : {"train-000000.tar", "validation-000000.tar"}) {
    EXPECT_LE(fs::file_size(out / shard), 1u << 20) << shard;
    EXPECT_GT(fs::file_size(out / shard), (1u << 20) - 4096) << shard;  // filled
  }

  // The samples are the idx files' images, in their order, with labels by
  // classes.txt.
  auto images = ReadIdxImages(std::string(kSource) + "/train-images-idx3-ubyte.gz");
  auto labels = ReadIdxLabels(std::string(kSource) + "/train-labels-idx1-ubyte.gz");
  ASSERT_TRUE(images.ok() && labels.ok());
  auto dataset = testing::CreatePlugin<Dataset>(
      "name: \"webdataset\" options { [type.googleapis.com/pipeline.WebDatasetOptions] { "
      "shards: \"" + (out / "train-{000000..000001}.tar").string() + "\" } }");
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  ASSERT_EQ((*dataset)->size(), 600);
  EXPECT_THAT((*dataset)->class_names(), ElementsAre("Trouser", "Bag"));
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < 600; ++i) {
    const std::string name = (*dataset)->SampleName(i);
    const std::string member = name.substr(name.rfind(':') + 1);
    ASSERT_THAT(member, ::testing::EndsWith(".png"));
    const int64_t index = std::stoll(member);
    ASSERT_TRUE(indices.empty() || index > indices.back()) << name;
    indices.push_back(index);
    absl::StatusOr<Sample> sample = (*dataset)->Get(i);
    ASSERT_TRUE(sample.ok()) << sample.status();
    EXPECT_EQ(sample->label, (*labels)[index] == 1 ? 0 : 1) << name;
    const auto first = images->pixels.begin() + 784 * index;
    ASSERT_EQ(sample->image.ShapeString(), "28x28x1");
    EXPECT_TRUE(std::equal(sample->image.u8.begin(), sample->image.u8.end(), first)) << name;
  }

  // Python's tarfile sees the same members, bytes and labels.
  if (std::system("python3 -c 'import tarfile, zlib' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3 is not installed: the shards were not read with tarfile";
  }
  const std::vector<std::vector<std::string>> rows = PythonTarMembers(
      out / "list_members.py",
      {(out / "train-000000.tar").string(), (out / "train-000001.tar").string()});
  ASSERT_EQ(rows.size(), 1200u);
  for (int64_t i = 0; i < 600; ++i) {
    const std::vector<std::string>& image = rows[2 * i];
    const std::vector<std::string>& label = rows[2 * i + 1];
    ASSERT_EQ(image.size(), 8u);
    ASSERT_EQ(label.size(), 8u);
    EXPECT_EQ(image[0] + ":" + image[1], (*dataset)->SampleName(i));
    Image source;
    source.height = source.width = 28;
    source.channels = 1;
    const auto first = images->pixels.begin() + 784 * indices[i];
    source.u8.assign(first, first + 784);
    const std::string png = *EncodePng(source);
    EXPECT_EQ(image[2], std::to_string(png.size())) << image[1];
    EXPECT_EQ(image[3], std::to_string(crc32(0, reinterpret_cast<const Bytef*>(png.data()),
                                             static_cast<uInt>(png.size()))))
        << image[1];
    EXPECT_EQ(label[1], image[1].substr(0, image[1].size() - 4) + ".cls");
    EXPECT_EQ(label[4], std::to_string((*dataset)->Get(i)->label)) << label[1];
    for (const auto* row : {&image, &label}) {
      EXPECT_EQ((*row)[5], "0o644");
      EXPECT_EQ((*row)[6], "946684800");
      EXPECT_EQ((*row)[7], "0");  // a regular file
    }
  }

  // The same run gives the same bytes.
  const fs::path again = TempFolder("webdataset_again");
  ASSERT_EQ(RunTool("--output=" + again.string() + flags).exit_code, 0);
  for (const std::string& name : SortedNames(out)) {
    if (name == "list_members.py") continue;
    EXPECT_EQ(ReadFile(again / name), ReadFile(out / name)) << name;
  }
}

TEST(PrepareDataTest, WebDatasetRefusesToMixWithAnEarlierRunUnlessOverwriting) {
  const fs::path out = TempFolder("webdataset_rerun");
  const std::string flags = "--output=" + out.string() + " --layout=webdataset --limit_per_class=1";
  ASSERT_EQ(RunTool(flags + " --classes=Bag").exit_code, 0);
  fs::create_directories(out / "notes");
  const Result again = RunTool(flags + " --classes=Coat");
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_EQ(again.output, "prepare_data: --output: " + out.string() + " already holds webdataset "
                          "shards (from an earlier run?); pass --overwrite to replace them, or "
                          "choose another --output\n");
  ASSERT_EQ(RunTool(flags + " --classes=Coat,Bag --format=jpeg --overwrite").exit_code, 0);
  EXPECT_EQ(ReadFile(out / "classes.txt"), "Coat\nBag\n");
  EXPECT_TRUE(fs::exists(out / "notes"));  // not a shard: kept
  auto dataset = testing::CreatePlugin<Dataset>(
      "name: \"webdataset\" options { [type.googleapis.com/pipeline.WebDatasetOptions] { "
      "shards: \"" + (out / "validation-000000.tar").string() + "\" } }");
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ((*dataset)->size(), 2);
  EXPECT_THAT((*dataset)->SampleName(0), ::testing::EndsWith(".jpg"));
}

}  // namespace
}  // namespace pipeline
