#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/temp_path.h"
#include "pipeline/image/image_codec.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/testing/plugin_test_util.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Image Solid(int height, int width, int channels, uint8_t value) {
  Image image;
  image.height = height;
  image.width = width;
  image.channels = channels;
  image.u8.assign(static_cast<size_t>(height) * width * channels, value);
  return image;
}

using testing::WriteFile;

// A fresh, empty folder per test.
fs::path TempRoot(const std::string& name) {
  const fs::path root = fs::path(::testing::TempDir()) / ("image_folder_" + name);
  fs::remove_all(root);
  fs::create_directories(root);
  return root;
}

std::string Config(const fs::path& root, const std::string& extra = "") {
  return "name: \"image_folder\" options { [type.googleapis.com/pipeline.ImageFolderOptions] { "
         "root: \"" + root.string() + "\" " + extra + " } }";
}

// bird: one RGB JPEG. cat: gray PNGs in nested folders, in an order where
// torchvision's folder-by-folder walk differs from sorting whole paths.
// dog: an RGB PNG with an upper-case extension. Plus things to ignore.
fs::path MakeTree(const std::string& name) {
  const fs::path root = TempRoot(name);
  WriteFile(root / "bird/b.jpg", *EncodeJpeg(Solid(8, 10, 3, 200), 95));
  WriteFile(root / "cat/z.png", *EncodePng(Solid(4, 6, 1, 1)));
  WriteFile(root / "cat/a/y.png", *EncodePng(Solid(4, 6, 1, 2)));
  WriteFile(root / "cat/a-b/x.png", *EncodePng(Solid(4, 6, 1, 3)));
  WriteFile(root / "cat/a/deeper/w.jpeg", *EncodeJpeg(Solid(4, 6, 1, 4), 100));
  WriteFile(root / "dog/d.PNG", *EncodePng(Solid(5, 5, 3, 50)));
  WriteFile(root / "dog/notes.txt", "not an image");
  WriteFile(root / "dog/._d.PNG", "macOS resource fork");
  WriteFile(root / ".ipynb_checkpoints/c.png", *EncodePng(Solid(1, 1, 1, 0)));
  WriteFile(root / "README.md", "files in root are ignored");
  return root;
}

TEST(ImageFolderTest, ClassesLabelsAndOrderFollowTorchvision) {
  const fs::path root = MakeTree("order");
  auto dataset = testing::CreatePlugin<Dataset>(Config(root));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_THAT((*dataset)->class_names(), ElementsAre("bird", "cat", "dog"));
  ASSERT_EQ((*dataset)->size(), 6);
  std::vector<int64_t> labels;
  std::vector<std::string> shapes;
  std::vector<int> first_pixels;
  for (int64_t i = 0; i < (*dataset)->size(); ++i) {
    auto sample = (*dataset)->Get(i);
    ASSERT_TRUE(sample.ok()) << sample.status();
    labels.push_back(sample->label);
    shapes.push_back(sample->image.ShapeString());
    first_pixels.push_back(sample->image.u8[0]);
  }
  EXPECT_THAT(labels, ElementsAre(0, 1, 1, 1, 1, 2));
  EXPECT_THAT(shapes, ElementsAre("8x10x3", "4x6x1", "4x6x1", "4x6x1", "4x6x1", "5x5x3"));
  // cat: folders cat < cat/a < cat/a-b < cat/a/deeper ('-' sorts before '/').
  EXPECT_EQ(first_pixels[1], 1);
  EXPECT_EQ(first_pixels[2], 2);
  EXPECT_EQ(first_pixels[3], 3);
  EXPECT_NEAR(first_pixels[4], 4, 1);
  EXPECT_EQ(first_pixels[5], 50);
  EXPECT_FALSE((*dataset)->Get(6).ok());
  EXPECT_FALSE((*dataset)->Get(-1).ok());
}

TEST(ImageFolderTest, ColorOption) {
  const fs::path root = MakeTree("color");
  auto gray = testing::CreatePlugin<Dataset>(Config(root, "color: GRAY"));
  ASSERT_TRUE(gray.ok()) << gray.status();
  auto rgb = testing::CreatePlugin<Dataset>(Config(root, "color: RGB"));
  ASSERT_TRUE(rgb.ok()) << rgb.status();
  for (int64_t i = 0; i < (*gray)->size(); ++i) {
    EXPECT_EQ((*gray)->Get(i)->image.channels, 1) << i;
    EXPECT_EQ((*rgb)->Get(i)->image.channels, 3) << i;
  }
  // A gray cat replicated, not tinted.
  const Image cat = (*rgb)->Get(1)->image;
  EXPECT_EQ(cat.u8[0], 1);
  EXPECT_EQ(cat.u8[1], 1);
  EXPECT_EQ(cat.u8[2], 1);
}

TEST(ImageFolderTest, ClassesOptionKeepsSortedOrder) {
  const fs::path root = MakeTree("subset");
  auto dataset = testing::CreatePlugin<Dataset>(Config(root, R"(classes: "dog" classes: "bird")"));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_THAT((*dataset)->class_names(), ElementsAre("bird", "dog"));
  ASSERT_EQ((*dataset)->size(), 2);
  EXPECT_EQ((*dataset)->Get(0)->label, 0);
  EXPECT_EQ((*dataset)->Get(1)->label, 1);
  EXPECT_EQ((*dataset)->Get(1)->image.ShapeString(), "5x5x3");
}

TEST(ImageFolderTest, GetIsThreadSafe) {
  const fs::path root = MakeTree("threads");
  auto dataset = testing::CreatePlugin<Dataset>(Config(root, "color: RGB"));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        for (int64_t i = 0; i < (*dataset)->size(); ++i) {
          auto sample = (*dataset)->Get(i);
          failures[t] += !sample.ok() || sample->image.channels != 3;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_THAT(failures, ElementsAre(0, 0, 0, 0));
}

TEST(ImageFolderTest, MissingRoot) {
  const fs::path root = TempRoot("missing") / "data/train";
  EXPECT_EQ(testing::CreatePlugin<Dataset>(Config(root)).status().message(),
            "dataset \"image_folder\": root: folder " + root.string() +
                " does not exist; create it with one subfolder per class, or run `bazel run "
                "//tools:prepare_data` and use root: \"data/fashion_mnist/train\"");
}

TEST(ImageFolderTest, RelativeRootIsResolvedFromBazelRunFolder) {
  const fs::path base = TempRoot("relative");
  WriteFile(base / "data/train/cat/a.png", *EncodePng(Solid(2, 2, 1, 9)));
  setenv("BUILD_WORKING_DIRECTORY", base.c_str(), 1);
  auto dataset = testing::CreatePlugin<Dataset>(Config("data/train"));
  auto missing = testing::CreatePlugin<Dataset>(Config("data/validation"), {.split = "validation"});
  unsetenv("BUILD_WORKING_DIRECTORY");
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ((*dataset)->size(), 1);
  EXPECT_EQ(missing.status().message(),
            "dataset \"image_folder\": root: folder data/validation does not exist (looked for " +
                (base / "data/validation").string() +
                "); create it with one subfolder per class, or run `bazel run "
                "//tools:prepare_data` and use root: \"data/fashion_mnist/validation\"");
}

TEST(ImageFolderTest, EmptyRootField) {
  EXPECT_EQ(testing::CreatePlugin<Dataset>(R"pb(name: "image_folder")pb").status().message(),
            "options: root: not set; set it to the folder with one subfolder per class, e.g. "
            "root: \"data/train\"");
}

TEST(ImageFolderTest, RootIsAFile) {
  const fs::path file = TempRoot("file") / "train.zip";
  WriteFile(file, "zip");
  EXPECT_THAT(std::string(testing::CreatePlugin<Dataset>(Config(file)).status().message()),
              HasSubstr("root: " + file.string() + " is a file, not a folder"));
}

TEST(ImageFolderTest, RootWithoutClassFolders) {
  const fs::path root = TempRoot("flat");
  WriteFile(root / "a.png", *EncodePng(Solid(2, 2, 1, 0)));
  WriteFile(root / "b.png", *EncodePng(Solid(2, 2, 1, 0)));
  EXPECT_EQ(testing::CreatePlugin<Dataset>(Config(root)).status().message(),
            "dataset \"image_folder\": root: folder " + root.string() +
                " has no class subfolders (it holds 2 images directly, but each class needs its "
                "own subfolder); put each class's images in " + root.string() +
                "/<class name>/");
  const fs::path empty = TempRoot("empty");
  EXPECT_EQ(testing::CreatePlugin<Dataset>(Config(empty)).status().message(),
            "dataset \"image_folder\": root: folder " + empty.string() +
                " has no class subfolders; put each class's images in " + empty.string() +
                "/<class name>/");
}

TEST(ImageFolderTest, EmptyClassFolderIsNamed) {
  const fs::path root = MakeTree("empty_class");
  fs::create_directories(root / "eel/sub");
  WriteFile(root / "eel/sub/readme.txt", "no images here");
  EXPECT_EQ(testing::CreatePlugin<Dataset>(Config(root)).status().message(),
            "dataset \"image_folder\": class folder " + (root / "eel").string() +
                " holds no .jpg, .jpeg or .png files; add images, delete the folder, or list "
                "the classes to use in `classes`");
  // Leaving it out with `classes` is the fix the message offers.
  EXPECT_TRUE(testing::CreatePlugin<Dataset>(Config(root, R"(classes: "cat")")).ok());
}

TEST(ImageFolderTest, UnknownClassListsTheFolders) {
  const fs::path root = MakeTree("unknown_class");
  EXPECT_EQ(testing::CreatePlugin<Dataset>(Config(root, R"(classes: "cat" classes: "dogs")"))
                .status()
                .message(),
            "dataset \"image_folder\": classes: no folder \"dogs\" in " + root.string() +
                "; folders found: bird, cat, dog. Did you mean \"dog\"?");
}

TEST(ImageFolderTest, BadClassesEntries) {
  const fs::path root = MakeTree("bad_classes");
  EXPECT_EQ(testing::CreatePlugin<Dataset>(Config(root, R"(classes: "cat" classes: "cat")"))
                .status()
                .message(),
            "options: classes: \"cat\" is listed twice");
  EXPECT_EQ(testing::CreatePlugin<Dataset>(Config(root, R"(classes: "cat/a")")).status().message(),
            "options: classes: \"cat/a\" is not a folder name; list subfolders of root by name");
}

TEST(ImageFolderTest, CorruptImageFailsAtGetNamingTheFile) {
  const fs::path root = MakeTree("corrupt");
  const std::string png = *EncodePng(Solid(16, 16, 1, 7));
  WriteFile(root / "cat/zz_broken.png", png.substr(0, png.size() / 2));
  WriteFile(root / "dog/empty.jpg", "");
  auto dataset = testing::CreatePlugin<Dataset>(Config(root));
  ASSERT_TRUE(dataset.ok()) << dataset.status();  // scanning does not decode
  ASSERT_EQ((*dataset)->size(), 8);
  // cat/ holds z.png then zz_broken.png, before cat/a...; dog/ d.PNG, empty.jpg.
  EXPECT_EQ((*dataset)->Get(2).status().message(),
            (root / "cat/zz_broken.png").string() +
                ": truncated or corrupt PNG (libpng: unexpected end of file)");
  EXPECT_EQ((*dataset)->Get(7).status().message(),
            (root / "dog/empty.jpg").string() +
                ": empty file (0 bytes); expected a JPEG or PNG image");
  EXPECT_TRUE((*dataset)->Get(1).ok());
}

TEST(ImageFolderTest, DeletedFileFailsAtGet) {
  const fs::path root = MakeTree("deleted");
  auto dataset = testing::CreatePlugin<Dataset>(Config(root));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  fs::remove(root / "bird/b.jpg");
  EXPECT_EQ(std::string((*dataset)->Get(0).status().message()),
            (root / "bird/b.jpg").string() + ": cannot open: No such file or directory");
}

// cache_decoded_mb keeps decodes in memory: with the files gone, the kept
// images are still served, and a region of one is that part of the image.
TEST(ImageFolderTest, KeptDecodesAreServedFromMemory) {
  const fs::path root = MakeTree("kept");
  auto dataset = testing::CreatePlugin<Dataset>(Config(root, "cache_decoded_mb: 1"));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  std::vector<Image> first;
  for (int64_t i = 0; i < (*dataset)->size(); ++i) {
    auto sample = (*dataset)->Get(i);
    ASSERT_TRUE(sample.ok()) << sample.status();
    first.push_back(sample->image);
  }
  fs::remove_all(root);
  for (int64_t i = 0; i < (*dataset)->size(); ++i) {
    auto sample = (*dataset)->Get(i);
    ASSERT_TRUE(sample.ok()) << sample.status();
    EXPECT_EQ(sample->image.u8, first[i].u8) << i;
  }
  ImageRegion where;
  auto region = (*dataset)->GetRegion(
      0, [](int, int) { return ImageRegion{2, 3, 4, 5}; }, &where);
  ASSERT_TRUE(region.ok()) << region.status();
  ASSERT_EQ(region->image.height, 4);
  ASSERT_EQ(region->image.width, 5);
  EXPECT_EQ(where.top, 0);
  EXPECT_EQ(where.height, 4);
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 5 * 3; ++x) {
      EXPECT_EQ(region->image.u8[y * 15 + x], first[0].u8[(2 + y) * 10 * 3 + 9 + x]);
    }
  }
  // A region reaching past the image is left to the transform, with the
  // whole image, as Dataset's own GetRegion does.
  auto past = (*dataset)->GetRegion(
      0, [](int, int) { return ImageRegion{6, 0, 4, 10}; }, &where);
  ASSERT_TRUE(past.ok()) << past.status();
  EXPECT_EQ(past->image.u8, first[0].u8);
  EXPECT_EQ(where.top, 6);
  EXPECT_EQ(where.height, 4);
}

// Images are kept only while they fit: of three 0.46 MiB images, a 1 MiB
// cache keeps the first two decoded.
TEST(ImageFolderTest, TheCacheKeepsNoMoreThanItsBudget) {
  const fs::path root = TempRoot("kept_budget");
  for (const char* name : {"a/0.png", "a/1.png", "a/2.png"}) {
    WriteFile(root / name, *EncodePng(Solid(400, 400, 3, 7)));
  }
  auto dataset = testing::CreatePlugin<Dataset>(Config(root, "cache_decoded_mb: 1"));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  for (int64_t i = 0; i < 3; ++i) ASSERT_TRUE((*dataset)->Get(i).ok());
  fs::remove_all(root);
  EXPECT_TRUE((*dataset)->Get(0).ok());
  EXPECT_TRUE((*dataset)->Get(1).ok());
  EXPECT_THAT((*dataset)->Get(2).status().message(), HasSubstr("2.png: cannot open"));
}

TEST(ImageFolderTest, NegativeCacheSizeIsRejected) {
  auto dataset =
      testing::CreatePlugin<Dataset>(Config(TempRoot("kept_negative"), "cache_decoded_mb: -5"));
  EXPECT_THAT(dataset.status().message(),
              HasSubstr("cache_decoded_mb: -5 is negative; set the MiB of decoded images to "
                        "keep, or 0 to keep none"));
}

TEST(ImageFolderTest, SymlinkLoopsAreWalkedOnce) {
  const fs::path root = MakeTree("symlink_loops");
  fs::create_directory_symlink(root, root / "cat/a/to_root");        // the dataset root
  fs::create_directory_symlink(root / "cat", root / "cat/a/up");     // this class's folder
  fs::create_directory_symlink(root / "cat/a", root / "cat/a/self");  // the folder itself
  fs::create_directory_symlink(root / "dog/loop", root / "dog/loop");  // itself, by name (ELOOP)
  fs::create_symlink(root / "dog/x.png", root / "dog/x.png");         // a file link loop
  auto dataset = testing::CreatePlugin<Dataset>(Config(root));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  // Exactly the 6 images of MakeTree: no class picked up another's, and no
  // image came twice.
  EXPECT_EQ((*dataset)->size(), 6);
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < (*dataset)->size(); ++i) labels.push_back((*dataset)->Get(i)->label);
  EXPECT_THAT(labels, ElementsAre(0, 1, 1, 1, 1, 2));
}

TEST(ImageFolderTest, FileTooLargeIsRefusedBeforeReading) {
  const fs::path root = MakeTree("huge_file");
  {
    // Sparse: it takes no disk space, but reading it would take 1 GiB of RAM.
    std::ofstream(root / "dog/huge.jpg", std::ios::binary) << "\xFF\xD8\xFF";
  }
  fs::resize_file(root / "dog/huge.jpg", kMaxImageFileBytes + 1);
  auto dataset = testing::CreatePlugin<Dataset>(Config(root));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  // dog/ holds d.PNG, then huge.jpg.
  EXPECT_EQ((*dataset)->Get(6).status().message(),
            (root / "dog/huge.jpg").string() +
                ": file too large for an image: 1073741825 bytes (the limit is 1073741824 bytes)");
}

// Root reads any file whatever its mode, so the permission tests run their
// checks in a child process that has dropped to user "nobody", in a tree
// under /tmp (the test's own temp folder may sit below a folder only root
// may enter). Exit codes: 0 = passed, 1 = failed (message on stderr),
// 77 = the setup cannot work here (reason on stderr).
int RunUnprivileged(const std::function<int()>& check) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) {
      std::fprintf(stderr, "cannot switch to user nobody (65534)\n");
      _exit(77);
    }
    _exit(check());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

fs::path PermissionTree(const std::string& name) {
  std::string pattern = "/tmp/image_folder_" + name + "_XXXXXX";
  const fs::path root = mkdtemp(pattern.data());
  WriteFile(root / "cat/a.png", *EncodePng(Solid(2, 2, 1, 1)));
  WriteFile(root / "cat/b.png", *EncodePng(Solid(2, 2, 1, 2)));
  WriteFile(root / "dog/sub/c.png", *EncodePng(Solid(2, 2, 1, 3)));
  WriteFile(root / "dog/d.png", *EncodePng(Solid(2, 2, 1, 4)));
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    chmod(entry.path().c_str(), entry.is_directory() ? 0755 : 0644);
  }
  chmod(root.c_str(), 0755);
  return root;
}

TEST(ImageFolderTest, UnreadableFileFailsAtGetNamingTheFile) {
  const fs::path root = PermissionTree("unreadable_file");
  auto dataset = testing::CreatePlugin<Dataset>(Config(root));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  chmod((root / "cat/b.png").c_str(), 0);
  const std::string expected = (root / "cat/b.png").string() + ": cannot open: Permission denied";
  const int result = RunUnprivileged([&] {
    if (!(*dataset)->Get(0).ok()) {
      std::fprintf(stderr, "user nobody cannot read the readable cat/a.png here\n");
      return 77;
    }
    absl::StatusOr<Sample> sample = (*dataset)->Get(1);
    if (sample.status().message() == expected &&
        sample.status().code() == absl::StatusCode::kPermissionDenied) {
      return 0;
    }
    std::fprintf(stderr, "got: %s\n", sample.status().ToString().c_str());
    return 1;
  });
  fs::remove_all(root);
  if (result == 77) GTEST_SKIP() << "running as root, and dropping to user nobody failed";
  EXPECT_EQ(result, 0) << "expected: " << expected;
}

TEST(ImageFolderTest, UnreadableFolderFailsTheScanNamingTheFolder) {
  const fs::path root = PermissionTree("unreadable_folder");
  chmod((root / "dog/sub").c_str(), 0);
  const std::string expected = "dataset \"image_folder\": cannot list folder " +
                               (root / "dog/sub").string() +
                               ": Permission denied; make it readable (chmod a+rx) or move it "
                               "out of the dataset";
  const int result = RunUnprivileged([&] {
    std::ifstream readable(root / "dog/d.png");
    if (!readable) {
      std::fprintf(stderr, "user nobody cannot read the readable dog/d.png here\n");
      return 77;
    }
    auto dataset = testing::CreatePlugin<Dataset>(Config(root));
    if (dataset.status().message() == expected) return 0;
    std::fprintf(stderr, "got: %s\n", dataset.status().ToString().c_str());
    return 1;
  });
  chmod((root / "dog/sub").c_str(), 0755);
  fs::remove_all(root);
  if (result == 77) GTEST_SKIP() << "running as root, and dropping to user nobody failed";
  EXPECT_EQ(result, 0) << "expected: " << expected;
}

// Inference (predict): the files and folders named instead of root, in path
// order, labelled where their folder is a trained class.
DatasetContext Inference(std::vector<std::string> paths, int channels = 0) {
  DatasetContext context;
  context.split = "inference";
  context.inference = InferenceInput{std::move(paths), {"cat", "dog"}, channels};
  return context;
}

TEST(ImageFolderTest, InferenceReadsTheNamedFilesAndFolders) {
  const fs::path tree = MakeTree("inference");
  const fs::path loose = TempRoot("inference_loose") / "photo.bin";  // decoded by content
  WriteFile(loose, *EncodePng(Solid(3, 3, 1, 9)));
  EXPECT_TRUE(Registry<Dataset>::Global().TraitsOf("image_folder").reads_inference_input);
  auto dataset = testing::CreatePlugin<Dataset>(Config("/not/the/training/root"),
                                                Inference({(tree / "cat").string(),
                                                           (tree / "bird/b.jpg").string(),
                                                           loose.string()}));
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_THAT((*dataset)->class_names(), ElementsAre("cat", "dog"));
  std::vector<std::string> names;
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < (*dataset)->size(); ++i) {
    names.push_back((*dataset)->SampleName(i));
    auto sample = (*dataset)->Get(i);
    ASSERT_TRUE(sample.ok()) << sample.status();
    labels.push_back(sample->label);
  }
  const std::string cat = (tree / "cat").string();
  EXPECT_THAT(names, ElementsAre(cat + "/a-b/x.png", cat + "/a/deeper/w.jpeg", cat + "/a/y.png",
                                 cat + "/z.png", (tree / "bird/b.jpg").string(), loose.string()));
  // Only z.png lies directly in a folder named after a class.
  EXPECT_THAT(labels, ElementsAre(kUnknownLabel, kUnknownLabel, kUnknownLabel, 0, kUnknownLabel,
                                  kUnknownLabel));
}

TEST(ImageFolderTest, InferenceDecodesAsTheOptionsOrTheAskedChannelsSay) {
  const fs::path tree = MakeTree("inference_color");
  const std::string jpeg = (tree / "bird/b.jpg").string();
  auto as_configured = testing::CreatePlugin<Dataset>(Config(tree, "color: GRAY"), Inference({jpeg}));
  ASSERT_TRUE(as_configured.ok()) << as_configured.status();
  EXPECT_EQ((*as_configured)->Get(0)->image.channels, 1);
  auto asked = testing::CreatePlugin<Dataset>(Config(tree, "color: GRAY"), Inference({jpeg}, 3));
  ASSERT_TRUE(asked.ok()) << asked.status();
  EXPECT_EQ((*asked)->Get(0)->image.channels, 3);
}

TEST(ImageFolderTest, InferenceNamesWhatItCannotRead) {
  const fs::path empty = TempRoot("inference_empty");
  WriteFile(empty / "notes.txt", "not an image");
  auto missing = testing::CreatePlugin<Dataset>(Config(empty), Inference({"/no/such/photo.jpg"}));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("/no/such/photo.jpg: no such file or folder"));
  auto no_images = testing::CreatePlugin<Dataset>(Config(empty), Inference({empty.string()}));
  EXPECT_THAT(no_images.status().message(),
              HasSubstr(empty.string() + ": holds no .jpg/.jpeg/.png files"));
  // A file that is no image fails at Get, naming it, like a training sample.
  auto broken = testing::CreatePlugin<Dataset>(Config(empty),
                                               Inference({(empty / "notes.txt").string()}));
  ASSERT_TRUE(broken.ok()) << broken.status();
  EXPECT_THAT((*broken)->Get(0).status().message(), HasSubstr("notes.txt"));
}

}  // namespace
}  // namespace pipeline
