// Trains on an ImageFolder seeded with one file of every kind of bad input a
// scraped or hand-assembled dataset holds, through the train binary as a
// user runs it: under on_bad_sample: SKIP the run finishes and names every
// skipped file; under FAIL (the default) it stops with one error naming one.

#include <png.h>
#include <sys/wait.h>
#include <turbojpeg.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/temp_path.h"
#include "pipeline/testing/command.h"
#include "pipeline/image/image_codec.h"
#include "pipeline/image/libpng_writer.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

using Result = testing::CommandResult;

Result RunTrain(const std::string& arguments) {
  return testing::RunCommand("tools/train " + arguments);
}

using testing::WriteFile;

Image Noise(int height, int width, int channels, uint32_t seed) {
  Image image;
  image.height = height;
  image.width = width;
  image.channels = channels;
  image.u8.resize(static_cast<size_t>(height) * width * channels);
  for (uint8_t& v : image.u8) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<uint8_t>(seed >> 24);
  }
  return image;
}

// Fails the test when libpng refuses the image.
std::string LibpngPng(int width, int height, uint32_t format, const void* pixels,
                      const void* colormap = nullptr, int colormap_entries = 0) {
  std::string bytes =
      EncodePngWithLibpng(width, height, format, pixels, colormap, colormap_entries);
  EXPECT_FALSE(bytes.empty()) << "libpng could not write the test image";
  return bytes;
}

std::string CmykJpeg(int width, int height) {
  std::vector<uint8_t> cmyk(static_cast<size_t>(width) * height * 4);
  for (size_t i = 0; i < cmyk.size(); ++i) cmyk[i] = static_cast<uint8_t>(i * 37);
  tjhandle handle = tjInitCompress();
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  EXPECT_EQ(tjCompress2(handle, cmyk.data(), width, 0, height, TJPF_CMYK, &buffer, &size,
                        TJSAMP_444, 90, 0),
            0);
  std::string jpeg(reinterpret_cast<char*>(buffer), size);
  tjFree(buffer);
  tjDestroy(handle);
  return jpeg;
}

// A PNG signature and IHDR (with a correct CRC) claiming width x height.
std::string PngHeader(uint32_t width, uint32_t height) {
  std::string ihdr = "IHDR";
  for (uint32_t v : {width, height}) {
    for (int shift = 24; shift >= 0; shift -= 8) ihdr.push_back(static_cast<char>(v >> shift));
  }
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // 8-bit RGB
  const uint32_t crc = crc32(0, reinterpret_cast<const Bytef*>(ihdr.data()), ihdr.size());
  std::string bytes("\x89PNG\r\n\x1a\n\x00\x00\x00\x0d", 12);
  bytes += ihdr;
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>(crc >> shift));
  return bytes;
}

// A valid JPEG whose frame header is rewritten to claim side x side.
std::string JpegClaiming(int side) {
  std::string jpeg = *EncodeJpeg(Noise(8, 8, 3, 5), 90);
  const size_t sof = jpeg.find("\xFF\xC0");
  EXPECT_NE(sof, std::string::npos);
  for (size_t offset : {sof + 5, sof + 7}) {
    jpeg[offset] = static_cast<char>(side >> 8);
    jpeg[offset + 1] = static_cast<char>(side & 0xFF);
  }
  return jpeg;
}

struct HostileFolder {
  fs::path root;
  int good = 0;
  std::vector<fs::path> bad;  // each must be skipped, and named
  int hostile_inputs = 0;     // bad files + odd-but-valid files + tree traps
};

HostileFolder MakeHostileFolder(const std::string& name) {
  HostileFolder folder;
  folder.root = fs::path(::testing::TempDir()) / name;
  fs::remove_all(folder.root);
  const fs::path cat = folder.root / "cat", dog = folder.root / "dog";
  // Plain images, written with the project's own encoders. Every usable
  // image is 8x8 (the gray ones come out RGB: color: RGB), so a tiny model
  // trains in seconds without a resize.
  for (int i = 0; i < 4; ++i) {
    WriteFile(cat / absl::StrCat("good", i, ".png"), *EncodePng(Noise(8, 8, 3, 10 + i)));
    WriteFile(dog / absl::StrCat("good", i, ".jpg"), *EncodeJpeg(Noise(8, 8, 3, 20 + i), 90));
  }
  folder.good = 8;

  // Valid files in the layouts that trip up decoders: these must load.
  const std::vector<uint16_t> sixteen(8 * 8 * 3, 40000);
  WriteFile(cat / "sixteen_bit.png", LibpngPng(8, 8, PNG_FORMAT_LINEAR_RGB, sixteen.data()));
  const std::vector<uint8_t> gray_alpha(8 * 8 * 2, 128);
  WriteFile(cat / "gray_alpha.png", LibpngPng(8, 8, PNG_FORMAT_GA, gray_alpha.data()));
  const std::vector<uint8_t> colormap = {255, 0, 0, 0, 0, 255};
  std::vector<uint8_t> indices(8 * 8);
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = i % 2;
  WriteFile(dog / "palette.png",
            LibpngPng(8, 8, PNG_FORMAT_RGB_COLORMAP, indices.data(), colormap.data(), 2));
  WriteFile(dog / "cmyk.jpg", CmykJpeg(8, 8));
  folder.good += 4;
  folder.hostile_inputs += 4;

  // Files that cannot be used.
  const std::string jpeg = *EncodeJpeg(Noise(32, 32, 3, 7), 90);
  const std::string png = *EncodePng(Noise(32, 32, 3, 8));
  const std::vector<std::pair<fs::path, std::string>> bad = {
      {cat / "empty.jpg", ""},
      {cat / "truncated.jpg", jpeg.substr(0, jpeg.size() / 2)},
      {cat / "truncated.png", png.substr(0, png.size() / 2)},
      {cat / "huge_header.png", PngHeader(60000, 60000)},
      {dog / "huge_header.jpg", JpegClaiming(60000)},
      {dog / "error_page.jpg", "<!DOCTYPE html><html><body>403 Forbidden</body></html>\n"},
      {dog / "animation.jpg", std::string("GIF89a\x0c\x00\x0c\x00\x80\x00\x00\xff\xff\xff", 16)},
      {dog / "bitmap.png",
       "BM" + std::string(12, '\0') + std::string("\x28\x00\x00\x00", 4) + std::string(40, '\0')},
  };
  for (const auto& [path, bytes] : bad) {
    WriteFile(path, bytes);
    folder.bad.push_back(path);
  }
  // A sparse file just over the size limit: no disk, but 1 GiB if read.
  { std::ofstream(dog / "disk_image.jpg", std::ios::binary) << "\xFF\xD8\xFF"; }
  fs::resize_file(dog / "disk_image.jpg", kMaxImageFileBytes + 1);
  folder.bad.push_back(dog / "disk_image.jpg");
  // Unreadable: only when the test is not root, for whom file modes do not
  // stop reading (image_folder_test checks it as user "nobody").
  if (geteuid() != 0) {
    WriteFile(cat / "unreadable.png", png);
    fs::permissions(cat / "unreadable.png", fs::perms::none);
    folder.bad.push_back(cat / "unreadable.png");
  } else {
    std::cout << "running as root: the unreadable-file case is left out of this tree (root "
                 "reads a chmod 000 file); image_folder_test covers it as user nobody\n";
  }
  folder.hostile_inputs += static_cast<int>(folder.bad.size());

  // Traps in the tree itself: a link back to the root (a loop that would
  // also bring in every other class), a link to itself, a dangling link.
  fs::create_directory_symlink(folder.root, cat / "loop_to_root");
  fs::create_directory_symlink(cat / "self", cat / "self");
  fs::create_symlink(folder.root / "no_such_file.jpg", dog / "dangling.jpg");
  folder.hostile_inputs += 3;
  return folder;
}

std::string Config(const fs::path& root, const std::string& output_dir,
                   const std::string& on_bad_sample, const std::string& train_extra = "",
                   const std::string& top_extra = "") {
  const std::string data = absl::StrCat(R"pb(
      dataset {
        name: "image_folder"
        options { [type.googleapis.com/pipeline.ImageFolderOptions] { root: ")pb",
                                        root.string(), R"pb(" color: RGB } }
      }
      drop_last: false
  )pb",
                                        on_bad_sample);
  return absl::StrCat("model { name: \"small_cnn\" options { "
                      "[type.googleapis.com/pipeline.SmallCnnOptions] { width: 4 } } }\n",
                      "train_data {", data, train_extra, "}\nvalidation_data {", data, "}\n",
                      "trainer { batch_size: 4 epochs: 2 threads: 1 seed: 3 }\n", top_extra,
                      "output_dir: \"", output_dir, "\"\n");
}

std::string WriteConfig(const std::string& name, const std::string& text) {
  const fs::path path = fs::path(::testing::TempDir()) / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(HostileDataTest, SkipTrainsToTheEndAndNamesEverySkippedFile) {
  const HostileFolder folder = MakeHostileFolder("hostile_skip");
  std::cout << "hostile inputs in the tree: " << folder.hostile_inputs << " ("
            << folder.bad.size() << " unusable files, 4 unusual but valid images, 3 link traps)"
            << ", plus " << folder.good - 4 << " plain images\n";
  const std::string output_dir = (fs::path(::testing::TempDir()) / "hostile_skip_out").string();
  Result result = RunTrain(
      "--config=" +
      WriteConfig("hostile_skip.textproto",
                  Config(folder.root, output_dir, "on_bad_sample: SKIP")));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // The run's own account, in the test log.
  for (absl::string_view line : absl::StrSplit(result.output, '\n')) {
    if (absl::StartsWith(line, "train: ") || absl::StartsWith(line, "epoch ") ||
        absl::StartsWith(line, "bad samples") || absl::StartsWith(line, "  sample ")) {
      std::cout << line << "\n";
    }
  }
  const int bad = static_cast<int>(folder.bad.size());
  // The scan saw every regular image file once: no link brought one in twice.
  EXPECT_THAT(result.output, HasSubstr(absl::StrCat("train: ", folder.good + bad, " samples, 2 classes, sample 8x8x3")))
      << result.output;
  for (int epoch : {1, 2}) {
    EXPECT_THAT(result.output,
                HasSubstr(absl::StrCat("epoch ", epoch, "/2: train_data: skipped ", bad,
                                       " samples that failed to load (on_bad_sample: SKIP), "
                                       "each replaced by the next sample in the epoch's order "
                                       "that loads:")))
        << result.output;
    EXPECT_THAT(result.output,
                HasSubstr(absl::StrCat("epoch ", epoch, "/2: validation_data: skipped ", bad,
                                       " samples that failed to load (on_bad_sample: SKIP), left "
                                       "out of the validation pass:")));
  }
  EXPECT_THAT(result.output,
              HasSubstr(absl::StrCat("bad samples: train_data: skipped ", 2 * bad,
                                     " times in 2 epochs, ", bad,
                                     " different samples; fix or remove these files:")));
  // Validation counts only the samples that loaded, once each.
  EXPECT_THAT(result.output, HasSubstr(absl::StrCat("(", folder.good, " samples)")));
  // Every bad file is named with the reason, in each epoch's report and in
  // the summary (3 lines per split: 2 epochs + summary, 2 splits).
  const std::vector<std::pair<std::string, std::string>> reasons = {
      {"empty.jpg", ": empty file (0 bytes)"},
      {"truncated.jpg", ": truncated or corrupt JPEG (libjpeg: Premature end of JPEG file)"},
      {"truncated.png", ": truncated or corrupt PNG (libpng: "},
      {"huge_header.png", ": image too large: 60000x60000 (the limit is 32768 pixels per side"},
      {"huge_header.jpg", ": image too large: 60000x60000 (the limit is 32768 pixels per side"},
      {"error_page.jpg", ": unknown image format (starts with \"<!DOCTYP\", which looks like text)"},
      {"animation.jpg", ": GIF image (whatever its name says), which is not supported"},
      {"bitmap.png", ": BMP image (whatever its name says), which is not supported"},
      {"disk_image.jpg", ": file too large for an image: 1073741825 bytes"},
      {"unreadable.png", ": cannot open: Permission denied"},
  };
  int named = 0;
  for (const fs::path& path : folder.bad) {
    for (const auto& [file, reason] : reasons) {
      if (path.filename() != file) continue;
      ++named;
      const std::string line = path.string() + reason;
      int lines = 0;
      for (absl::string_view l : absl::StrSplit(result.output, '\n')) {
        if (absl::StrContains(l, line)) ++lines;
      }
      EXPECT_EQ(lines, 6) << line << "\n" << result.output;
    }
  }
  EXPECT_EQ(named, bad);
  for (const char* fine : {"sixteen_bit.png", "gray_alpha.png", "palette.png", "cmyk.jpg"}) {
    EXPECT_THAT(result.output, Not(HasSubstr(fine))) << result.output;
  }
  EXPECT_THAT(result.output, Not(HasSubstr("error:")));
  // The machine-readable events (train writes them to stdout) carry the counts.
  for (int epoch : {1, 2}) {
    EXPECT_THAT(result.output,
                HasSubstr(absl::StrCat("{\"event\":\"bad_samples\",\"epoch\":", epoch,
                                       ",\"train_skipped\":", bad,
                                       ",\"validation_skipped\":", bad, "}")));
  }
}

TEST(HostileDataTest, SkipUnderDdpKeepsTheRanksInStep) {
  const HostileFolder folder = MakeHostileFolder("hostile_ddp");
  const std::string output_dir = (fs::path(::testing::TempDir()) / "hostile_ddp_out").string();
  Result result = RunTrain(
      "--config=" +
      WriteConfig("hostile_ddp.textproto",
                  Config(folder.root, output_dir, "on_bad_sample: SKIP",
                         " sampler { name: \"distributed\" }",
                         "strategy { name: \"ddp\" options { "
                         "[type.googleapis.com/pipeline.DdpOptions] { nproc_per_node: 2 } } }\n")));
  // Each rank replaces the bad samples of its own shard, so both take the
  // same steps (a rank short of batches would leave the other waiting in
  // an all-reduce until the timeout).
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const int bad = static_cast<int>(folder.bad.size());
  const int total = folder.good + bad;
  // The distributed sampler pads the shards to equal size from the start of
  // the epoch's order, so one bad sample may be taken twice.
  int64_t train_skipped = -1;
  for (absl::string_view line : absl::StrSplit(result.output, '\n')) {
    // Rank 0's lines, as "[rank 0] ..." from the launcher.
    constexpr absl::string_view kPrefix = "[rank 0] epoch 1/2: train_data: skipped ";
    if (absl::StartsWith(line, kPrefix)) {
      ASSERT_TRUE(absl::SimpleAtoi(line.substr(kPrefix.size(), line.find(' ', kPrefix.size()) -
                                                                   kPrefix.size()),
                                   &train_skipped))
          << line;
    }
  }
  EXPECT_GE(train_skipped, bad) << result.output;
  EXPECT_LE(train_skipped, bad + total % 2) << result.output;
  // Validation is split without padding: every bad sample is left out once,
  // every good one counted once, over both ranks.
  EXPECT_THAT(result.output,
              HasSubstr(absl::StrCat("epoch 2/2: validation_data: skipped ", bad, " samples")))
      << result.output;
  EXPECT_THAT(result.output, HasSubstr(absl::StrCat("(", folder.good, " samples)")));
  EXPECT_THAT(result.output,
              HasSubstr("[rank 0]   (the count is all 2 processes'; the files listed are this "
                        "process's share)"));
  // The bad_samples event is rank 0's alone, with the job-wide counts.
  EXPECT_THAT(result.output,
              HasSubstr(absl::StrCat("\n{\"event\":\"bad_samples\",\"epoch\":2,\"train_skipped\":",
                                     train_skipped)));
  // 2 epochs of ceil(ceil(total / 2) / 4) steps.
  EXPECT_THAT(result.output, HasSubstr("\"steps\":" + std::to_string(2 * (((total + 1) / 2 + 3) / 4))))
      << result.output;
}

TEST(HostileDataTest, FailStopsAtTheFirstBadFileAndNamesIt) {
  const HostileFolder folder = MakeHostileFolder("hostile_fail");
  const std::string output_dir = (fs::path(::testing::TempDir()) / "hostile_fail_out").string();
  Result result = RunTrain(
      "--config=" + WriteConfig("hostile_fail.textproto", Config(folder.root, output_dir, "")));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output, Not(HasSubstr("terminate called")));
  EXPECT_THAT(result.output, Not(HasSubstr("Exception raised from")));
  // One error line. Sample 0 (cat/empty.jpg, first by name) is read before
  // training to learn the model's input, so that is where it stops.
  std::vector<std::string> errors;
  for (absl::string_view line : absl::StrSplit(result.output, '\n')) {
    if (absl::StartsWith(line, "error: ")) errors.emplace_back(line);
  }
  ASSERT_EQ(errors.size(), 1u) << result.output;
  EXPECT_EQ(errors[0], "error: train_data: sample 0: " + (folder.root / "cat/empty.jpg").string() +
                           ": empty file (0 bytes); expected a JPEG or PNG image");
}

TEST(HostileDataTest, FailNamesABadFileMetDuringTraining) {
  // Only the plain images and one truncated JPEG, whose name sorts last, so
  // the run gets past its first sample and meets it inside an epoch.
  const fs::path root = fs::path(::testing::TempDir()) / "hostile_fail_mid";
  fs::remove_all(root);
  for (int i = 0; i < 4; ++i) {
    WriteFile(root / "cat" / absl::StrCat("good", i, ".png"), *EncodePng(Noise(8, 8, 3, i)));
    WriteFile(root / "dog" / absl::StrCat("good", i, ".png"), *EncodePng(Noise(8, 8, 3, 9 + i)));
  }
  const std::string jpeg = *EncodeJpeg(Noise(32, 32, 3, 7), 90);
  WriteFile(root / "dog/zz_truncated.jpg", jpeg.substr(0, jpeg.size() / 2));
  Result result = RunTrain("--config=" + WriteConfig("hostile_fail_mid.textproto",
                                                     Config(root, (root / "out").string(), "")));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("error: sample 8: " + (root / "dog/zz_truncated.jpg").string() +
                        ": truncated or corrupt JPEG (libjpeg: Premature end of JPEG file)"))
      << result.output;
}

TEST(HostileDataTest, SkipFailsClearlyWhenNothingLoads) {
  const fs::path root = fs::path(::testing::TempDir()) / "hostile_all_bad";
  fs::remove_all(root);
  WriteFile(root / "cat/a.jpg", "");
  WriteFile(root / "dog/b.png", "not a png");
  Result result = RunTrain(
      "--config=" +
      WriteConfig("hostile_all_bad.textproto",
                  Config(root, (root / "out").string(), "on_bad_sample: SKIP")) +
      " --dry_run");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("error: train_data: every one of the 2 samples failed to load, so "
                        "on_bad_sample: SKIP has none to use instead; the first: sample 0: " +
                        (root / "cat/a.jpg").string() + ": empty file (0 bytes)"))
      << result.output;
}

}  // namespace
}  // namespace pipeline
