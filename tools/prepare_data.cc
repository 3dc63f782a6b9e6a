// prepare_data: writes Fashion-MNIST (from the dataset-fashion-mnist
// package's idx files) as an image-folder tree, the layout the `image_folder`
// dataset and torchvision's ImageFolder read:
//
//   <output>/train/<class>/<index>.png        from train-*-idx*-ubyte
//   <output>/validation/<class>/<index>.png   from t10k-*-idx*-ubyte
//
// or, with --layout=webdataset, as webdataset tar shards (the `webdataset`
// dataset and Python's webdataset package read them; docs/webdataset.md):
//
//   <output>/train-000000.tar, ...       <index>.png + <index>.cls per sample
//   <output>/train-000000.tar.idx, ...   each shard's index
//   <output>/validation-000000.tar, ...
//   <output>/classes.txt                 the class names, line i = label i
//
// A shard is closed when the next sample would take it past
// --shard_size_mb; the labels are the classes' positions in Fashion-MNIST's
// order among those written, and the samples keep the idx files' order.
//
// <index> is the sample's position in its idx file, zero-padded so that
// sorting by name (as ImageFolder does) keeps the original order. Each file
// is written to a hidden temporary name and renamed into place, so an
// interrupted run leaves no half-written image (at most a hidden ".*.tmp"
// file, which ImageFolder skips).
//
//   bazel run //tools:prepare_data -- --classes=Trouser,Bag --limit_per_class=500
//
// then train with:
//
//   train_data {
//     dataset {
//       name: "image_folder"
//       options { [type.googleapis.com/pipeline.ImageFolderOptions] {
//         root: "data/fashion_mnist/train" } }
//     }
//   }

#include <gflags/gflags.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "pipeline/data/webdataset_writer.h"
#include "pipeline/image/idx_reader.h"
#include "pipeline/image/image_codec.h"
#include "pipeline/interfaces/image.h"
#include "pipeline/util/edit_distance.h"

DEFINE_string(source, "/usr/share/datasets/fashion-mnist",
              "folder with the Fashion-MNIST idx files (train-* and t10k-*, .gz or not)");
DEFINE_string(output, "data/fashion_mnist",
              "folder to write train/ and validation/ into; a relative path is taken from "
              "where `bazel run` was called");
DEFINE_string(format, "png", "png (lossless) or jpeg");
DEFINE_string(layout, "image_folder",
              "image_folder (<output>/<split>/<class>/<index>.png) or webdataset "
              "(<output>/<split>-000000.tar, ...; default --output data/fashion_mnist_wds)");
DEFINE_int32(shard_size_mb, 100,
             "with --layout=webdataset: close a shard when the next sample would take it past "
             "this many MiB");
DEFINE_int32(jpeg_quality, 90, "JPEG quality, 1..100 (only with --format=jpeg)");
DEFINE_int32(size, 0, "resize to size x size pixels (bilinear); 0 = keep 28x28");
DEFINE_string(classes, "", "comma-separated class names to write; empty = all ten");
DEFINE_int32(limit_per_class, 0, "write at most this many images per class and split; 0 = all");
DEFINE_bool(rgb, false, "write 3-channel images (gray replicated) instead of 1-channel");
DEFINE_bool(overwrite, false,
            "delete <output>/train and <output>/validation (webdataset: the shards, their "
            "indexes and classes.txt) first if they hold files");

namespace pipeline {
namespace {

namespace fs = std::filesystem;


constexpr int kMaxSize = 1024;
constexpr int kMaxShardSizeMb = 1 << 20;  // 1 TiB
constexpr char kWebDatasetOutput[] = "data/fashion_mnist_wds";

struct Settings {
  fs::path source;
  fs::path output;
  bool webdataset = false;
  uint64_t shard_bytes = 0;  // webdataset only
  bool jpeg = false;
  int jpeg_quality = 90;
  int size = 0;
  std::vector<bool> keep_class;  // by label
  int64_t limit_per_class = 0;
  bool rgb = false;
  bool overwrite = false;
};

// `bazel run` starts the binary inside its runfiles tree; relative paths are
// meant from where the user typed the command.
fs::path FromWorkingDirectory(const std::string& path) {
  const char* working_directory = std::getenv("BUILD_WORKING_DIRECTORY");
  if (fs::path(path).is_relative() && working_directory != nullptr &&
      *working_directory != '\0') {
    return fs::path(working_directory) / path;
  }
  return fs::path(path);
}

absl::StatusOr<Settings> ParseSettings() {
  Settings settings;
  settings.source = FromWorkingDirectory(FLAGS_source);
  if (FLAGS_output.empty()) return absl::InvalidArgumentError("--output: empty; name a folder");
  const std::string layout = absl::AsciiStrToLower(FLAGS_layout);
  if (layout != "image_folder" && layout != "webdataset") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--layout: \"", FLAGS_layout, "\" is not supported; use image_folder or webdataset"));
  }
  settings.webdataset = layout == "webdataset";
  // The two layouts side by side by default, rather than shards among the
  // class folders.
  const bool output_is_default = gflags::GetCommandLineFlagInfoOrDie("output").is_default;
  settings.output = FromWorkingDirectory(
      settings.webdataset && output_is_default ? kWebDatasetOutput : FLAGS_output);
  if (FLAGS_shard_size_mb < 1 || FLAGS_shard_size_mb > kMaxShardSizeMb) {
    return absl::InvalidArgumentError(absl::StrCat("--shard_size_mb: ", FLAGS_shard_size_mb,
                                                   " is outside 1..", kMaxShardSizeMb));
  }
  settings.shard_bytes = static_cast<uint64_t>(FLAGS_shard_size_mb) << 20;
  const std::string format = absl::AsciiStrToLower(FLAGS_format);
  if (format == "webdataset") {
    return absl::InvalidArgumentError(
        "--format: webdataset is a layout, not an image format; use --layout=webdataset (its "
        "images are --format=png or jpeg)");
  }
  if (format != "png" && format != "jpeg") {
    return absl::InvalidArgumentError(
        absl::StrCat("--format: \"", FLAGS_format, "\" is not supported; use png or jpeg"));
  }
  settings.jpeg = format == "jpeg";
  if (FLAGS_jpeg_quality < 1 || FLAGS_jpeg_quality > 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("--jpeg_quality: ", FLAGS_jpeg_quality, " is outside 1..100"));
  }
  settings.jpeg_quality = FLAGS_jpeg_quality;
  if (FLAGS_size < 0 || FLAGS_size > kMaxSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--size: ", FLAGS_size, " must be 0 (keep 28x28) or 1..", kMaxSize));
  }
  settings.size = FLAGS_size;
  if (FLAGS_limit_per_class < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--limit_per_class: ", FLAGS_limit_per_class, " is negative; use 0 for all images"));
  }
  settings.limit_per_class = FLAGS_limit_per_class;
  settings.rgb = FLAGS_rgb;
  settings.overwrite = FLAGS_overwrite;

  // The folder names are the fashion_mnist dataset's class names, so both
  // datasets report the same classes.
  const std::vector<std::string>& names = FashionMnistClassNames();
  std::vector<std::string> wanted =
      absl::StrSplit(FLAGS_classes, ',', absl::SkipWhitespace());
  settings.keep_class.assign(names.size(), wanted.empty());
  for (std::string name : wanted) {
    absl::StripAsciiWhitespace(&name);
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--classes: unknown class \"", name, "\"; valid: ",
                       absl::StrJoin(names, ", "), ".", DidYouMean(name, names)));
    }
    settings.keep_class[it - names.begin()] = true;
  }
  return settings;
}

// "<source>/<stem>.gz" if present, else "<source>/<stem>".
absl::StatusOr<std::string> FindIdxFile(const fs::path& source, const std::string& stem) {
  std::error_code error;
  if (!fs::is_directory(source, error)) {
    return absl::NotFoundError(absl::StrCat(
        "--source: folder ", source.string(), " does not exist; install the "
        "dataset-fashion-mnist package (tools/setup.sh does) or point --source at a folder "
        "with the Fashion-MNIST idx files"));
  }
  for (const std::string& name : {stem + ".gz", stem}) {
    if (fs::exists(source / name, error)) return (source / name).string();
  }
  return absl::NotFoundError(
      absl::StrCat("--source: ", source.string(), " holds no ", stem, ".gz or ", stem));
}

// Bilinear with pixel centres at +0.5 (align_corners=False, as
// torch.nn.functional.interpolate and OpenCV).
Image Resize(const Image& in, int size) {
  Image out;
  out.height = out.width = size;
  out.channels = in.channels;
  out.u8.resize(static_cast<size_t>(size) * size * in.channels);
  auto source_coordinate = [](int x, int in_size, int out_size, int* x0, int* x1, float* t) {
    const float s = std::clamp((x + 0.5f) * in_size / out_size - 0.5f, 0.0f,
                               static_cast<float>(in_size - 1));
    *x0 = static_cast<int>(s);
    *x1 = std::min(*x0 + 1, in_size - 1);
    *t = s - *x0;
  };
  for (int y = 0; y < size; ++y) {
    int y0, y1;
    float ty;
    source_coordinate(y, in.height, size, &y0, &y1, &ty);
    for (int x = 0; x < size; ++x) {
      int x0, x1;
      float tx;
      source_coordinate(x, in.width, size, &x0, &x1, &tx);
      for (int c = 0; c < in.channels; ++c) {
        auto at = [&](int yy, int xx) {
          return static_cast<float>(in.u8[(static_cast<size_t>(yy) * in.width + xx) *
                                              in.channels + c]);
        };
        const float top = at(y0, x0) * (1 - tx) + at(y0, x1) * tx;
        const float bottom = at(y1, x0) * (1 - tx) + at(y1, x1) * tx;
        out.u8[(static_cast<size_t>(y) * size + x) * in.channels + c] =
            static_cast<uint8_t>(std::lround(top * (1 - ty) + bottom * ty));
      }
    }
  }
  return out;
}

Image ToRgb(const Image& gray) {
  Image rgb;
  rgb.height = gray.height;
  rgb.width = gray.width;
  rgb.channels = 3;
  rgb.u8.reserve(gray.u8.size() * 3);
  for (uint8_t v : gray.u8) rgb.u8.insert(rgb.u8.end(), {v, v, v});
  return rgb;
}

// Temporary name + rename: the final name only ever holds a complete file.
absl::Status WriteFileAtomically(const fs::path& path, const std::string& bytes) {
  const fs::path temporary = path.parent_path() / ("." + path.filename().string() + ".tmp");
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    file.close();
    if (!file) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      return absl::PermissionDeniedError(
          absl::StrCat("cannot write ", temporary.string(), ": ", std::strerror(errno)));
    }
  }
  std::error_code error;
  fs::rename(temporary, path, error);
  if (error) {
    fs::remove(temporary, error);
    return absl::PermissionDeniedError(
        absl::StrCat("cannot rename ", temporary.string(), " to ", path.string(), ": ",
                     error.message()));
  }
  return absl::OkStatus();
}

// An earlier run's images mixed with this run's (another --limit_per_class
// or --format) would silently change the dataset, so a split folder that
// already holds files is only replaced when asked.
absl::Status PrepareSplitFolder(const fs::path& folder, bool overwrite) {
  std::error_code error;
  if (fs::exists(folder, error) && !fs::is_empty(folder, error)) {
    if (!overwrite) {
      return absl::AlreadyExistsError(absl::StrCat(
          "--output: ", folder.string(), " already holds files (from an earlier run?); pass "
          "--overwrite to replace them, or choose another --output"));
    }
    fs::remove_all(folder, error);
    if (error) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot delete ", folder.string(), ": ", error.message()));
    }
  }
  fs::create_directories(folder, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create ", folder.string(), ": ", error.message()));
  }
  return absl::OkStatus();
}

struct SplitFiles {
  std::string split;  // output folder name
  std::string images_path;
  std::string labels_path;
};

absl::StatusOr<SplitFiles> FindSplit(const Settings& settings, const std::string& idx_prefix,
                                     const std::string& split) {
  SplitFiles files{split, "", ""};
  auto images_path = FindIdxFile(settings.source, idx_prefix + "-images-idx3-ubyte");
  if (!images_path.ok()) return images_path.status();
  auto labels_path = FindIdxFile(settings.source, idx_prefix + "-labels-idx1-ubyte");
  if (!labels_path.ok()) return labels_path.status();
  files.images_path = *images_path;
  files.labels_path = *labels_path;
  return files;
}

// Each image of a split that the settings keep, encoded, with its name (its
// index in the idx file, zero-padded so that sorting by name keeps the
// order) and Fashion-MNIST label, in the idx file's order.
using SampleSink =
    std::function<absl::Status(const std::string& name, uint8_t label, const std::string& bytes)>;

// Hands each kept image of the split to `sink`; returns how many.
absl::StatusOr<int64_t> EncodeSplit(const Settings& settings, const SplitFiles& files,
                                    const SampleSink& sink) {
  auto images = ReadIdxImages(files.images_path);
  if (!images.ok()) return images.status();
  auto labels = ReadIdxLabels(files.labels_path);
  if (!labels.ok()) return labels.status();
  if (static_cast<int64_t>(labels->size()) != images->count) {
    return absl::DataLossError(absl::StrCat(files.images_path, " holds ", images->count,
                                            " images but ", files.labels_path, " holds ",
                                            labels->size(), " labels"));
  }
  const std::vector<std::string>& names = FashionMnistClassNames();
  const size_t pixels = static_cast<size_t>(images->rows) * images->cols;
  const size_t digits = std::to_string(std::max<int64_t>(images->count - 1, 0)).size();
  std::vector<int64_t> written(names.size(), 0);
  int64_t total = 0;
  for (int64_t i = 0; i < images->count; ++i) {
    const uint8_t label = (*labels)[i];
    if (label >= names.size()) {
      return absl::DataLossError(absl::StrCat(files.labels_path, ": label ", int{label},
                                              " of sample ", i, " is not a Fashion-MNIST class"));
    }
    if (!settings.keep_class[label]) continue;
    if (settings.limit_per_class > 0 && written[label] >= settings.limit_per_class) continue;

    Image image;
    image.height = images->rows;
    image.width = images->cols;
    image.channels = 1;
    const auto first = images->pixels.begin() + pixels * i;
    image.u8.assign(first, first + pixels);
    if (settings.size > 0) image = Resize(image, settings.size);
    if (settings.rgb) image = ToRgb(image);
    auto bytes = settings.jpeg ? EncodeJpeg(image, settings.jpeg_quality) : EncodePng(image);
    if (!bytes.ok()) return bytes.status();

    std::string index = std::to_string(i);
    index.insert(0, digits - std::min(digits, index.size()), '0');
    if (auto status = sink(index, label, *bytes); !status.ok()) return status;
    ++written[label];
    ++total;
  }
  return total;
}

// Writes one split into its (prepared, empty) folder; returns the number of
// images written.
absl::StatusOr<int64_t> WriteSplit(const Settings& settings, const SplitFiles& files) {
  const fs::path split_folder = settings.output / files.split;
  const std::vector<std::string>& names = FashionMnistClassNames();
  for (size_t label = 0; label < names.size(); ++label) {
    if (!settings.keep_class[label]) continue;
    std::error_code error;
    fs::create_directories(split_folder / names[label], error);
    if (error) {
      return absl::PermissionDeniedError(absl::StrCat(
          "cannot create ", (split_folder / names[label]).string(), ": ", error.message()));
    }
  }
  return EncodeSplit(settings, files,
                     [&](const std::string& name, uint8_t label, const std::string& bytes) {
                       return WriteFileAtomically(
                           split_folder / names[label] /
                               absl::StrCat(name, settings.jpeg ? ".jpg" : ".png"),
                           bytes);
                     });
}

// ---- --layout=webdataset ---------------------------------------------------

// The classes written, in Fashion-MNIST's order: line i of classes.txt.
std::vector<std::string> KeptClassNames(const Settings& settings) {
  std::vector<std::string> kept;
  for (size_t label = 0; label < settings.keep_class.size(); ++label) {
    if (settings.keep_class[label]) kept.push_back(FashionMnistClassNames()[label]);
  }
  return kept;
}

// A file of an earlier webdataset run: a shard, its index, a temporary of
// either, classes.txt.
bool IsShardOutput(const std::string& name) {
  if (name == "classes.txt") return true;
  const std::string bare = !name.empty() && name[0] == '.' ? name.substr(1) : name;
  return (absl::StartsWith(bare, "train-") || absl::StartsWith(bare, "validation-")) &&
         absl::StrContains(bare, ".tar");
}

// As PrepareSplitFolder: shards of an earlier run would mix with this
// run's, so they are only deleted when asked; other files stay.
absl::Status PrepareShardFolder(const fs::path& folder, bool overwrite) {
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create ", folder.string(), ": ", error.message()));
  }
  std::vector<fs::path> earlier;
  for (const auto& entry : fs::directory_iterator(folder, error)) {
    if (IsShardOutput(entry.path().filename().string())) earlier.push_back(entry.path());
  }
  if (earlier.empty()) return absl::OkStatus();
  if (!overwrite) {
    return absl::AlreadyExistsError(absl::StrCat(
        "--output: ", folder.string(), " already holds webdataset shards (from an earlier "
        "run?); pass --overwrite to replace them, or choose another --output"));
  }
  for (const fs::path& path : earlier) {
    if (!fs::remove(path, error) || error) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot delete ", path.string(), ": ", error.message()));
    }
  }
  return absl::OkStatus();
}

struct ShardedSplit {
  int64_t images = 0;
  size_t shards = 0;
};

// Writes one split as <output>/<split>-000000.tar, ... with their indexes.
absl::StatusOr<ShardedSplit> WriteSplitAsShards(const Settings& settings,
                                                const SplitFiles& files) {
  // Fashion-MNIST label -> the class's line in classes.txt.
  std::vector<int32_t> label_of(settings.keep_class.size(), -1);
  int32_t next = 0;
  for (size_t label = 0; label < label_of.size(); ++label) {
    if (settings.keep_class[label]) label_of[label] = next++;
  }
  WebDatasetWriterOptions options;
  options.folder = settings.output.string();
  options.prefix = files.split;
  options.max_shard_bytes = settings.shard_bytes;
  WebDatasetWriter writer(options);
  ShardedSplit split;
  auto images = EncodeSplit(settings, files,
                            [&](const std::string& name, uint8_t label, const std::string& bytes) {
                              return writer.Add(name, settings.jpeg ? "jpg" : "png", bytes,
                                                label_of[label]);
                            });
  if (!images.ok()) return images.status();
  auto shards = writer.Finish();
  if (!shards.ok()) return shards.status();
  return ShardedSplit{*images, shards->size()};
}

// The summary line's "(2 classes, 28x28x1 png)".
std::string Describe(const Settings& settings) {
  const int classes =
      static_cast<int>(std::count(settings.keep_class.begin(), settings.keep_class.end(), true));
  const int side = settings.size > 0 ? settings.size : 28;
  return absl::StrCat("(", classes, classes == 1 ? " class, " : " classes, ", side, "x", side,
                      "x", settings.rgb ? 3 : 1, " ", settings.jpeg ? "jpeg" : "png", ")");
}

std::string Shown(const fs::path& output) {
  std::error_code error;
  const fs::path shown = fs::absolute(output, error).lexically_normal();
  return (error ? output : shown).string();
}

absl::StatusOr<std::string> RunWebDataset(const Settings& settings, const SplitFiles& train_files,
                                          const SplitFiles& validation_files) {
  if (auto status = PrepareShardFolder(settings.output, settings.overwrite); !status.ok()) {
    return status;
  }
  auto train = WriteSplitAsShards(settings, train_files);
  if (!train.ok()) return train.status();
  auto validation = WriteSplitAsShards(settings, validation_files);
  if (!validation.ok()) return validation.status();
  if (auto status = WriteFileAtomically(settings.output / "classes.txt",
                                        absl::StrCat(absl::StrJoin(KeptClassNames(settings), "\n"),
                                                     "\n"));
      !status.ok()) {
    return status;
  }
  return absl::StrCat("prepare_data: wrote ", train->images, " train and ", validation->images,
                      " validation images ", Describe(settings), " as ", train->shards, " + ",
                      validation->shards, " webdataset shards to ", Shown(settings.output));
}

absl::StatusOr<std::string> Run() {
  auto settings = ParseSettings();
  if (!settings.ok()) return settings.status();
  // Everything that can be checked is checked before anything is deleted or
  // written, so a mistyped flag never leaves a half-made tree.
  auto train_files = FindSplit(*settings, "train", "train");
  if (!train_files.ok()) return train_files.status();
  auto validation_files = FindSplit(*settings, "t10k", "validation");
  if (!validation_files.ok()) return validation_files.status();
  if (settings->webdataset) return RunWebDataset(*settings, *train_files, *validation_files);
  for (const SplitFiles* files : {&*train_files, &*validation_files}) {
    if (auto status = PrepareSplitFolder(settings->output / files->split, settings->overwrite);
        !status.ok()) {
      return status;
    }
  }
  auto train = WriteSplit(*settings, *train_files);
  if (!train.ok()) return train.status();
  auto validation = WriteSplit(*settings, *validation_files);
  if (!validation.ok()) return validation.status();
  return absl::StrCat("prepare_data: wrote ", *train, " train and ", *validation,
                      " validation images ", Describe(*settings), " to ",
                      Shown(settings->output));
}

}  // namespace
}  // namespace pipeline

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "writes Fashion-MNIST as <output>/{train,validation}/<class>/<index>.png for the "
      "image_folder dataset, or with --layout=webdataset as <output>/{train,validation}-*.tar "
      "shards for the webdataset dataset");
  gflags::ParseCommandLineFlags(&argc, &argv, /*remove_flags=*/true);
  if (argc > 1) {
    std::fprintf(stderr, "prepare_data: unexpected argument \"%s\"; all settings are --flags "
                 "(see --help)\n", argv[1]);
    return 2;
  }
  // Errors are one line and exit code 2: the tool is run by hand and from
  // scripts, and neither wants a stack trace.
  try {
    auto summary = pipeline::Run();
    if (!summary.ok()) {
      std::fprintf(stderr, "prepare_data: %s\n", std::string(summary.status().message()).c_str());
      return 2;
    }
    std::printf("%s\n", summary->c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prepare_data: %s\n", e.what());
    return 2;
  }
}
