// prepare_data: writes Fashion-MNIST (from the dataset-fashion-mnist
// package's idx files) as an image-folder tree, the layout the `image_folder`
// dataset and torchvision's ImageFolder read:
//
//   <output>/train/<class>/<index>.png        from train-*-idx*-ubyte
//   <output>/validation/<class>/<index>.png   from t10k-*-idx*-ubyte
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
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
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
DEFINE_int32(jpeg_quality, 90, "JPEG quality, 1..100 (only with --format=jpeg)");
DEFINE_int32(size, 0, "resize to size x size pixels (bilinear); 0 = keep 28x28");
DEFINE_string(classes, "", "comma-separated class names to write; empty = all ten");
DEFINE_int32(limit_per_class, 0, "write at most this many images per class and split; 0 = all");
DEFINE_bool(rgb, false, "write 3-channel images (gray replicated) instead of 1-channel");
DEFINE_bool(overwrite, false,
            "delete <output>/train and <output>/validation first if they hold files");

namespace pipeline {
namespace {

namespace fs = std::filesystem;


constexpr int kMaxSize = 1024;

struct Settings {
  fs::path source;
  fs::path output;
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
  settings.output = FromWorkingDirectory(FLAGS_output);
  const std::string format = absl::AsciiStrToLower(FLAGS_format);
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

// Writes one split into its (prepared, empty) folder; returns the number of
// images written.
absl::StatusOr<int64_t> WriteSplit(const Settings& settings, const SplitFiles& files) {
  auto images = ReadIdxImages(files.images_path);
  if (!images.ok()) return images.status();
  auto labels = ReadIdxLabels(files.labels_path);
  if (!labels.ok()) return labels.status();
  if (static_cast<int64_t>(labels->size()) != images->count) {
    return absl::DataLossError(absl::StrCat(files.images_path, " holds ", images->count,
                                            " images but ", files.labels_path, " holds ",
                                            labels->size(), " labels"));
  }

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
    const fs::path path =
        split_folder / names[label] / absl::StrCat(index, settings.jpeg ? ".jpg" : ".png");
    if (auto status = WriteFileAtomically(path, *bytes); !status.ok()) return status;
    ++written[label];
    ++total;
  }
  return total;
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
  const int classes =
      static_cast<int>(std::count(settings->keep_class.begin(), settings->keep_class.end(), true));
  const int side = settings->size > 0 ? settings->size : 28;
  std::error_code error;
  const fs::path shown = fs::absolute(settings->output, error).lexically_normal();
  return absl::StrCat("prepare_data: wrote ", *train, " train and ", *validation,
                      " validation images (", classes, classes == 1 ? " class, " : " classes, ",
                      side, "x", side, "x", settings->rgb ? 3 : 1, " ",
                      settings->jpeg ? "jpeg" : "png", ") to ",
                      (error ? settings->output : shown).string());
}

}  // namespace
}  // namespace pipeline

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "writes Fashion-MNIST as <output>/{train,validation}/<class>/<index>.png for the "
      "image_folder dataset");
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
