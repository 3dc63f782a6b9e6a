// dataset `image_folder`: torchvision's ImageFolder. `root` holds one
// subfolder per class; classes are sorted by name and a sample's label is its
// class's index. The images are the .jpg/.jpeg/.png files anywhere below a
// class folder, in torchvision's order (folders sorted by path, files by
// name), so labels and sample indices match a PyTorch run on the same tree.
//
// The factory only scans the tree (paths and labels stay in memory); Get()
// reads and decodes one file, so the dataset can be far larger than RAM and
// loader threads decode in parallel without sharing any mutable state.
//
// Unlike torchvision, names starting with "." are skipped: macOS "._x.jpg"
// resource forks and ".ipynb_checkpoints" folders are never images or
// classes, and including them breaks training in confusing ways.
//
// For inference (DatasetContext::inference, tools/predict) it reads the
// files and folders a user names instead of `root`: a folder's images
// recursively (the same walk, in path order), a named file as it is, each
// decoded as `color` says; a sample in a folder named after a trained class
// gets that class's label, any other kUnknownLabel.
//
//   train_data {
//     dataset {
//       name: "image_folder"
//       options { [type.googleapis.com/pipeline.ImageFolderOptions] { root: "data/train" } }
//     }
//   }

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/image/image_codec.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/util/edit_distance.h"
#include "pipeline/util/status_macros.h"
#include "plugins/datasets/image_folder/folder_scan.h"
#include "plugins/datasets/image_folder/image_folder.pb.h"
#include "plugins/datasets/image_folder/image_folder_dataset.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;

using image_folder_internal::CollectImages;
using image_folder_internal::ListDirectory;
using image_folder_internal::MakeImageFolderDataset;

// `bazel run` starts the binary in its runfiles tree; a relative root is
// meant from where the user typed the command, as //tools:prepare_data
// writes it.
fs::path ResolveRoot(const std::string& root) {
  const fs::path path(root);
  const char* working_directory = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.is_relative() && working_directory != nullptr && *working_directory != '\0') {
    return fs::path(working_directory) / path;
  }
  return path;
}

// "a, b, c", cut short for trees with hundreds of classes.
std::string ListNames(const std::vector<std::string>& names) {
  constexpr size_t kShown = 20;
  if (names.size() <= kShown) return absl::StrJoin(names, ", ");
  return absl::StrCat(absl::StrJoin(names.begin(), names.begin() + kShown, ", "), ", ... (",
                      names.size(), " in all)");
}

DecodeOptions::Color ToDecodeColor(ImageFolderOptions::Color color) {
  switch (color) {
    case ImageFolderOptions::GRAY:
      return DecodeOptions::GRAY;
    case ImageFolderOptions::RGB:
      return DecodeOptions::RGB;
    case ImageFolderOptions::KEEP:
      break;
  }
  return DecodeOptions::KEEP;
}

// The dataset of inference: the images `input` names, labelled by their
// folder's name where it is one of the trained classes.
absl::StatusOr<std::unique_ptr<Dataset>> CreateForInference(const ImageFolderOptions& options,
                                                            const InferenceInput& input) {
  DecodeOptions decode{ToDecodeColor(options.color())};
  switch (input.channels) {
    case 0: break;
    case 1: decode.color = DecodeOptions::GRAY; break;
    case 3: decode.color = DecodeOptions::RGB; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("inference channels: ", input.channels, "; decodes to 1 or 3 channels"));
  }
  std::vector<std::string> paths;
  for (const std::string& path : input.paths) {
    std::error_code error;
    if (fs::is_directory(path, error)) {
      std::vector<std::string> found;
      std::vector<int64_t> unused_labels;
      RETURN_IF_ERROR(CollectImages(path, path, 0, /*canonical_root=*/{}, &found, &unused_labels));
      if (found.empty()) {
        return absl::NotFoundError(absl::StrCat(path, ": holds no .jpg/.jpeg/.png files"));
      }
      // In path order, so runs on the same tree are comparable line by line.
      std::sort(found.begin(), found.end());
      paths.insert(paths.end(), found.begin(), found.end());
    } else if (fs::exists(path, error)) {
      paths.push_back(path);  // decoded by its content, whatever its name
    } else {
      return absl::NotFoundError(absl::StrCat(path, ": no such file or folder"));
    }
  }
  std::map<std::string, int64_t> label_of;
  for (size_t label = 0; label < input.class_names.size(); ++label) {
    label_of.emplace(input.class_names[label], static_cast<int64_t>(label));
  }
  std::vector<int64_t> labels;
  for (const std::string& path : paths) {
    auto it = label_of.find(fs::path(path).parent_path().filename().string());
    labels.push_back(it == label_of.end() ? kUnknownLabel : it->second);
  }
  // Each image is read once: nothing to keep.
  return MakeImageFolderDataset(std::move(paths), std::move(labels), input.class_names, decode,
                                /*cache_bytes=*/0);
}

absl::StatusOr<std::unique_ptr<Dataset>> CreateImageFolder(const ImageFolderOptions& options,
                                                           const DatasetContext& context) {
  if (context.inference) return CreateForInference(options, *context.inference);
  const std::string& shown_root = options.root();
  const fs::path root = ResolveRoot(shown_root);
  std::error_code error;
  if (!fs::exists(root, error)) {
    std::string where;
    if (root.is_relative() || root.string() != shown_root) {
      where = absl::StrCat(" (looked for ", fs::absolute(root, error).string(), ")");
    }
    return absl::NotFoundError(absl::StrCat(
        "root: folder ", shown_root, " does not exist", where,
        "; create it with one subfolder per class, or run `bazel run //tools:prepare_data` "
        "and use root: \"data/fashion_mnist/",
        context.split == "validation" ? "validation" : "train", "\""));
  }
  if (!fs::is_directory(root, error)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "root: ", shown_root, " is a file, not a folder; set root to the folder that holds one "
        "subfolder per class"));
  }

  auto top = ListDirectory(root, shown_root);
  if (!top.ok()) {
    return absl::Status(top.status().code(), absl::StrCat("root: ", top.status().message()));
  }
  std::vector<std::string> found = std::move(top->folders);
  std::sort(found.begin(), found.end());
  if (found.empty()) {
    std::string hint;
    if (!top->images.empty()) {
      hint = absl::StrCat(" (it holds ", top->images.size(),
                          " images directly, but each class needs its own subfolder)");
    }
    return absl::FailedPreconditionError(
        absl::StrCat("root: folder ", shown_root, " has no class subfolders", hint,
                     "; put each class's images in ",
                     (fs::path(shown_root) / "<class name>").string(), "/"));
  }

  std::vector<std::string> class_names;
  if (options.classes().empty()) {
    class_names = found;
  } else {
    for (const std::string& wanted : options.classes()) {
      if (!std::binary_search(found.begin(), found.end(), wanted)) {
        std::string suggestion = DidYouMean(wanted, found);
        return absl::NotFoundError(absl::StrCat(
            "classes: no folder \"", wanted, "\" in ", shown_root, "; folders found: ",
            ListNames(found), suggestion.empty() ? "" : ".", suggestion));
      }
      class_names.push_back(wanted);
    }
    std::sort(class_names.begin(), class_names.end());
  }

  std::vector<std::string> paths;
  std::vector<int64_t> labels;
  const fs::path canonical_root = fs::canonical(root, error);  // empty on error
  for (size_t label = 0; label < class_names.size(); ++label) {
    const std::string shown = (fs::path(shown_root) / class_names[label]).string();
    const size_t before = paths.size();
    if (auto status = CollectImages(root / class_names[label], shown,
                                    static_cast<int64_t>(label), canonical_root, &paths, &labels);
        !status.ok()) {
      return status;
    }
    if (paths.size() == before) {
      return absl::FailedPreconditionError(absl::StrCat(
          "class folder ", shown, " holds no .jpg, .jpeg or .png files; add images, delete "
          "the folder, or list the classes to use in `classes`"));
    }
  }
  return MakeImageFolderDataset(std::move(paths), std::move(labels), std::move(class_names),
                                DecodeOptions{ToDecodeColor(options.color())},
                                int64_t{options.cache_decoded_mb()} << 20);
}

absl::Status ValidateImageFolder(const ImageFolderOptions& options) {
  if (options.root().empty()) {
    return absl::InvalidArgumentError(
        "root: not set; set it to the folder with one subfolder per class, e.g. "
        "root: \"data/train\"");
  }
  std::set<std::string> seen;
  for (const std::string& name : options.classes()) {
    if (name.empty() || absl::StrContains(name, '/')) {
      return absl::InvalidArgumentError(absl::StrCat(
          "classes: \"", name, "\" is not a folder name; list subfolders of root by name"));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("classes: \"", name, "\" is listed twice"));
    }
  }
  if (options.cache_decoded_mb() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cache_decoded_mb: ", options.cache_decoded_mb(),
        " is negative; set the MiB of decoded images to keep, or 0 to keep none"));
  }
  return absl::OkStatus();
}

PIPELINE_REGISTER_PLUGIN(Dataset, "image_folder", ImageFolderOptions,
                         "torchvision ImageFolder: <root>/<class>/**/*.{jpg,jpeg,png}, decoded "
                         "on Get()",
                         CreateImageFolder, ValidateImageFolder);
PIPELINE_PLUGIN_TRAITS(Dataset, "image_folder", DatasetTraits{.reads_inference_input = true});

}  // namespace
}  // namespace pipeline
