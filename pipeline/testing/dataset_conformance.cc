#include "pipeline/testing/dataset_conformance.h"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "pipeline/data/webdataset_writer.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/interfaces/image.h"
#include "pipeline/interfaces/random.h"
#include "pipeline/testing/conformance_config.h"
#include "pipeline/testing/image_checks.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace testing {

void PrintTo(const DatasetConformanceParams& params, std::ostream* out) {
  *out << "dataset \"" << params.plugin << "\" (split \"" << params.split << "\""
       << (params.fixture.empty() ? "" : ", fixture \"" + params.fixture + "\"")
       << ") with options {" << params.options << "}";
}

std::string DatasetConformanceTestName(
    const ::testing::TestParamInfo<DatasetConformanceParams>& info) {
  return ConformanceInstanceName(info.index);
}

namespace {

namespace fs = std::filesystem;

constexpr int kMaxSamplesChecked = 40;
constexpr int kThreads = 4;

// ---- The "image_tree" fixture --------------------------------------------

// Smooth gradients with some noise: structure for JPEG to keep, and every
// pixel likely distinct.
std::vector<uint8_t> Pixels(int height, int width, int channels, uint64_t salt) {
  std::vector<uint8_t> pixels(static_cast<size_t>(height) * width * channels);
  SampleRandom random(salt, 0, 0);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        const int value = (y * 255 / std::max(1, height - 1) + x * (40 + 60 * c) / width +
                           static_cast<int>(random.Below(48))) %
                          256;
        pixels[(static_cast<size_t>(y) * width + x) * channels + c] = static_cast<uint8_t>(value);
      }
    }
  }
  return pixels;
}

absl::Status WritePng(const fs::path& path, int height, int width, int channels, uint64_t salt) {
  std::vector<uint8_t> pixels = Pixels(height, width, channels, salt);
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  image.width = width;
  image.height = height;
  image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  if (!png_image_write_to_file(&image, path.c_str(), 0, pixels.data(), 0, nullptr)) {
    return absl::InternalError(absl::StrCat(path.string(), ": ", image.message));
  }
  return absl::OkStatus();
}

absl::Status WriteJpeg(const fs::path& path, int height, int width, int channels, int subsampling,
                       int quality, uint64_t salt) {
  std::vector<uint8_t> pixels = Pixels(height, width, channels, salt);
  tjhandle handle = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int failed =
      tjCompress2(handle, pixels.data(), width, 0, height, channels == 1 ? TJPF_GRAY : TJPF_RGB,
                  &jpeg, &size, channels == 1 ? TJSAMP_GRAY : subsampling, quality, 0);
  absl::Status status = absl::OkStatus();
  if (failed) {
    status = absl::InternalError(absl::StrCat(path.string(), ": ", tjGetErrorStr2(handle)));
  } else {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(jpeg), size);
  }
  tjFree(jpeg);
  tjDestroy(handle);
  return status;
}

// Three classes of PNG and JPEG files: gray and RGB, sizes below and above a
// JPEG block, odd ones, each chroma subsampling.
absl::Status WriteImageTree(const fs::path& root) {
  for (const char* name : {"apple", "bear", "cat/inner"}) fs::create_directories(root / name);
  RETURN_IF_ERROR(WriteJpeg(root / "apple/a.jpg", 37, 53, 3, TJSAMP_420, 90, 1));
  RETURN_IF_ERROR(WritePng(root / "apple/b.png", 9, 7, 3, 2));
  RETURN_IF_ERROR(WriteJpeg(root / "apple/c.jpeg", 20, 33, 1, TJSAMP_GRAY, 95, 3));
  RETURN_IF_ERROR(WritePng(root / "bear/d.png", 12, 10, 1, 4));
  RETURN_IF_ERROR(WriteJpeg(root / "bear/e.jpg", 64, 48, 3, TJSAMP_422, 85, 5));
  RETURN_IF_ERROR(WriteJpeg(root / "bear/f.jpg", 17, 17, 3, TJSAMP_444, 100, 6));
  RETURN_IF_ERROR(WriteJpeg(root / "cat/g.jpg", 8, 8, 1, TJSAMP_GRAY, 90, 7));
  RETURN_IF_ERROR(WritePng(root / "cat/inner/h.png", 30, 21, 3, 8));
  RETURN_IF_ERROR(WriteJpeg(root / "cat/inner/i.jpg", 41, 29, 3, TJSAMP_420, 75, 9));
  return absl::OkStatus();
}

// ---- The "webdataset_shards" fixture --------------------------------------

// The image tree's files as webdataset shards of at most 4 samples
// (train-000000.tar .. train-000002.tar, each with its .idx), keyed by their
// path in the tree ("cat/inner/h"), labelled by their class folder; with
// classes.txt and shards.txt (the shard names, one a line) beside them.
absl::Status WriteWebDatasetShards(const fs::path& root) {
  const fs::path tree = root / "tree";
  RETURN_IF_ERROR(WriteImageTree(tree));
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(tree)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  const std::vector<std::string> classes = {"apple", "bear", "cat"};
  WebDatasetWriterOptions options;
  options.folder = root.string();
  options.max_samples_per_shard = 4;
  WebDatasetWriter writer(options);
  for (const fs::path& file : files) {
    const fs::path relative = file.lexically_relative(tree);
    const std::string first = relative.begin()->string();
    const int32_t label = static_cast<int32_t>(
        std::find(classes.begin(), classes.end(), first) - classes.begin());
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    RETURN_IF_ERROR(writer.Add((relative.parent_path() / relative.stem()).string(),
                               relative.extension().string().substr(1), bytes, label));
  }
  absl::StatusOr<std::vector<std::string>> shards = writer.Finish();
  if (!shards.ok()) return shards.status();
  std::ofstream list(root / "shards.txt");
  for (const std::string& shard : *shards) list << fs::path(shard).filename().string() << "\n";
  std::ofstream names(root / "classes.txt");
  for (const std::string& name : classes) names << name << "\n";
  fs::remove_all(tree);
  return absl::OkStatus();
}

// Writes `fixture` into a fresh folder for the running test; returns it.
absl::StatusOr<std::string> PrepareFixture(const std::string& fixture) {
  if (fixture.empty()) return std::string();
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string folder = absl::StrCat("dataset_conformance_", test->test_suite_name(), "_",
                                    test->name());
  std::replace(folder.begin(), folder.end(), '/', '_');
  const fs::path root = fs::path(::testing::TempDir()) / folder;
  fs::remove_all(root);
  fs::create_directories(root);
  if (fixture == "image_tree") {
    RETURN_IF_ERROR(WriteImageTree(root));
    return root.string();
  }
  if (fixture == "webdataset_shards") {
    RETURN_IF_ERROR(WriteWebDatasetShards(root));
    return root.string();
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown dataset conformance fixture \"",
                                                 fixture, "\"; known: image_tree, "
                                                          "webdataset_shards"));
}

absl::StatusOr<std::unique_ptr<Dataset>> Create(const DatasetConformanceParams& params,
                                               const std::string& fixture_root) {
  const std::string options =
      absl::StrReplaceAll(params.options, {{"$FIXTURE_ROOT", fixture_root}});
  absl::StatusOr<PluginConfig> config = ConformanceConfig<Dataset>(params.plugin, options);
  if (!config.ok()) return config.status();
  DatasetContext context;
  context.split = params.split;
  context.seed = 5;
  return Registry<Dataset>::Global().Create(*config, context);
}

// ---- Comparisons ----------------------------------------------------------

// Beside image_checks.h's Same for images, which this one would hide.
using ::pipeline::testing::Same;

bool Same(const Sample& a, const Sample& b) { return a.label == b.label && Same(a.image, b.image); }

// Up to kMaxSamplesChecked indices spread over the dataset, first and last
// included.
std::vector<int64_t> IndicesToCheck(int64_t size) {
  std::vector<int64_t> indices;
  if (size <= kMaxSamplesChecked) {
    for (int64_t i = 0; i < size; ++i) indices.push_back(i);
    return indices;
  }
  for (int k = 0; k < kMaxSamplesChecked; ++k) {
    indices.push_back(k * (size - 1) / (kMaxSamplesChecked - 1));
  }
  return indices;
}

// Regions of a height x width image: whole, central, to the bottom-right
// corner from odd offsets, the top-left, a single last pixel, one row.
std::vector<ImageRegion> RegionsOf(int height, int width) {
  std::vector<ImageRegion> regions = {
      {0, 0, height, width},
      {height / 4, width / 4, std::max(1, height / 2), std::max(1, width / 2)},
      {height / 3, width * 3 / 5, height - height / 3, width - width * 3 / 5},
      {0, 0, (height + 1) / 2, (width + 2) / 3},
      {height - 1, width - 1, 1, 1},
      {height / 2, 0, 1, width},
  };
  return regions;
}

class DatasetUnderTest {
 public:
  absl::Status Build(const DatasetConformanceParams& params) {
    absl::StatusOr<std::string> root = PrepareFixture(params.fixture);
    if (!root.ok()) return root.status();
    fixture_root_ = *root;
    absl::StatusOr<std::unique_ptr<Dataset>> dataset = Create(params, fixture_root_);
    if (!dataset.ok()) return dataset.status();
    dataset_ = std::move(*dataset);
    return absl::OkStatus();
  }
  const Dataset& dataset() const { return *dataset_; }
  const std::string& fixture_root() const { return fixture_root_; }

 private:
  std::string fixture_root_;
  std::unique_ptr<Dataset> dataset_;
};

#define BUILD_OR_RETURN(dataset)                                       \
  DatasetUnderTest under_test_;                                        \
  {                                                                    \
    const absl::Status status_ = under_test_.Build(GetParam());        \
    ASSERT_TRUE(status_.ok()) << status_;                              \
  }                                                                    \
  const Dataset& dataset = under_test_.dataset();                      \
  ASSERT_GT(dataset.size(), 0) << "the dataset is empty"

TEST_P(DatasetConformanceTest, SizeIsPositiveAndStable) {
  BUILD_OR_RETURN(dataset);
  const int64_t size = dataset.size();
  EXPECT_EQ(dataset.size(), size);
  ASSERT_TRUE(dataset.Get(0).ok());
  EXPECT_EQ(dataset.size(), size) << "size() changed after a Get";
  absl::StatusOr<std::unique_ptr<Dataset>> second = Create(GetParam(), under_test_.fixture_root());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*second)->size(), size) << "a second instance from the same config";
  EXPECT_EQ((*second)->class_names(), dataset.class_names());
}

TEST_P(DatasetConformanceTest, GetIsDeterministicAndWellFormed) {
  BUILD_OR_RETURN(dataset);
  absl::StatusOr<std::unique_ptr<Dataset>> second = Create(GetParam(), under_test_.fixture_root());
  ASSERT_TRUE(second.ok()) << second.status();
  for (int64_t index : IndicesToCheck(dataset.size())) {
    absl::StatusOr<Sample> first = dataset.Get(index);
    ASSERT_TRUE(first.ok()) << "Get(" << index << "): " << first.status();
    EXPECT_TRUE(WellFormed(first->image, "image").ok()) << "Get(" << index << "): "
                                                << WellFormed(first->image, "image");
    absl::StatusOr<Sample> again = dataset.Get(index);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(Same(*first, *again)) << "Get(" << index << ") gave another sample the second time";
    absl::StatusOr<Sample> other = (*second)->Get(index);
    ASSERT_TRUE(other.ok()) << other.status();
    EXPECT_TRUE(Same(*first, *other)) << "Get(" << index << ") of a second instance differs";
  }
}

TEST_P(DatasetConformanceTest, LabelsIndexTheClassNames) {
  BUILD_OR_RETURN(dataset);
  const int64_t classes = static_cast<int64_t>(dataset.class_names().size());
  ASSERT_GT(classes, 0) << "class_names() is empty";
  for (int64_t index : IndicesToCheck(dataset.size())) {
    absl::StatusOr<Sample> sample = dataset.Get(index);
    ASSERT_TRUE(sample.ok()) << sample.status();
    EXPECT_GE(sample->label, 0) << "Get(" << index << ")";
    EXPECT_LT(sample->label, classes) << "Get(" << index << ")";
  }
}

TEST_P(DatasetConformanceTest, GetFromSeveralThreadsAtOnceEqualsGetInTurn) {
  BUILD_OR_RETURN(dataset);
  const std::vector<int64_t> indices = IndicesToCheck(dataset.size());
  std::vector<Sample> sequential;
  for (int64_t index : indices) {
    absl::StatusOr<Sample> sample = dataset.Get(index);
    ASSERT_TRUE(sample.ok()) << sample.status();
    sequential.push_back(*std::move(sample));
  }
  const int n = static_cast<int>(indices.size());
  std::vector<std::vector<std::string>> mismatches(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 2; ++round) {
        for (int k = 0; k < n; ++k) {
          // Each thread in its own order; odd threads ask for regions.
          const int j = (t % 2 == 0 ? k : n - 1 - k + round) % n;
          const Sample& expected = sequential[j];
          if (t % 2 == 0) {
            absl::StatusOr<Sample> sample = dataset.Get(indices[j]);
            if (!sample.ok() || !Same(*sample, expected)) {
              mismatches[t].push_back(
                  absl::StrCat("Get(", indices[j], "): ", sample.status().ToString()));
            }
          } else {
            const ImageRegion wanted = RegionsOf(expected.image.height, expected.image.width)[1];
            ImageRegion where;
            absl::StatusOr<Sample> sample = dataset.GetRegion(
                indices[j], [&](int, int) { return wanted; }, &where);
            if (!sample.ok() || sample->label != expected.label ||
                !Inside(where, sample->image.height, sample->image.width) ||
                where.height != wanted.height || where.width != wanted.width ||
                !Same(Cut(sample->image, where), Cut(expected.image, wanted))) {
              mismatches[t].push_back(
                  absl::StrCat("GetRegion(", indices[j], "): ", sample.status().ToString()));
            }
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(mismatches[t].empty())
        << "thread " << t << " got another sample than Get in turn gives: "
        << mismatches[t].front() << " (" << mismatches[t].size() << " in all)";
  }
}

TEST_P(DatasetConformanceTest, GetRegionIsGetCutToThePlannedRegion) {
  BUILD_OR_RETURN(dataset);
  for (int64_t index : IndicesToCheck(dataset.size())) {
    absl::StatusOr<Sample> whole = dataset.Get(index);
    ASSERT_TRUE(whole.ok()) << whole.status();
    const Image& image = whole->image;
    for (const ImageRegion& wanted : RegionsOf(image.height, image.width)) {
      if (!Inside(wanted, image.height, image.width)) continue;  // a 1-pixel image
      int plan_calls = 0;
      int planned_height = -1, planned_width = -1;
      ImageRegion where{-7, -7, -7, -7};
      absl::StatusOr<Sample> part = dataset.GetRegion(
          index,
          [&](int height, int width) {
            ++plan_calls;
            planned_height = height;
            planned_width = width;
            return wanted;
          },
          &where);
      const std::string what =
          absl::StrCat("GetRegion(", index, ") of ", RegionString(wanted), " in the ",
                       Describe(image), " image");
      ASSERT_TRUE(part.ok()) << what << ": " << part.status();
      EXPECT_EQ(plan_calls, 1) << what << ": the plan must be called once";
      EXPECT_EQ(planned_height, image.height) << what << ": the plan got another height";
      EXPECT_EQ(planned_width, image.width) << what << ": the plan got another width";
      EXPECT_EQ(part->label, whole->label) << what;
      ASSERT_TRUE(WellFormed(part->image, "image").ok()) << what << ": " << WellFormed(part->image, "image");
      EXPECT_EQ(part->image.channels, image.channels) << what;
      EXPECT_EQ(part->image.is_float(), image.is_float()) << what;
      ASSERT_TRUE(Inside(where, part->image.height, part->image.width))
          << what << ": *region_in_image " << RegionString(where) << " is not inside the "
          << Describe(part->image) << " image returned";
      ASSERT_EQ(where.height, wanted.height) << what;
      ASSERT_EQ(where.width, wanted.width) << what;
      const Image got = Cut(part->image, where);
      const Image expected = Cut(image, wanted);
      if (!Same(got, expected)) {
        size_t differing = 0, largest = 0;
        for (size_t i = 0; i < std::min(got.u8.size(), expected.u8.size()); ++i) {
          const int d = std::abs(int{got.u8[i]} - int{expected.u8[i]});
          differing += d != 0;
          largest = std::max<size_t>(largest, d);
        }
        ADD_FAILURE() << what << ": the pixels differ from Get's cut to the region ("
                      << differing << " of " << expected.u8.size() << " u8 values, by up to "
                      << largest << ")";
      }
    }
  }
}

TEST_P(DatasetConformanceTest, AnIndexOutOfRangeIsAnErrorNotACrash) {
  BUILD_OR_RETURN(dataset);
  const int64_t size = dataset.size();
  for (int64_t index : {int64_t{-1}, size, size + 1, size + 1000,
                        std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}) {
    absl::StatusOr<Sample> sample = dataset.Get(index);
    EXPECT_FALSE(sample.ok()) << "Get(" << index << ") of a dataset of " << size;
    if (!sample.ok()) {
      EXPECT_FALSE(sample.status().message().empty());
    }
    ImageRegion where;
    EXPECT_FALSE(dataset.GetRegion(index, [](int h, int w) { return ImageRegion{0, 0, h, w}; },
                                   &where)
                     .ok())
        << "GetRegion(" << index << ") of a dataset of " << size;
  }
}

#undef BUILD_OR_RETURN

}  // namespace

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DatasetConformanceTest);

}  // namespace testing
}  // namespace pipeline
