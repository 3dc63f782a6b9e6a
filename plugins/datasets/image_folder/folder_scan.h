#ifndef PLUGINS_DATASETS_IMAGE_FOLDER_FOLDER_SCAN_H_
#define PLUGINS_DATASETS_IMAGE_FOLDER_FOLDER_SCAN_H_

// Finding an image_folder tree's images: a folder's subfolders and image
// files, and every image below a class folder in torchvision's order.
// Internal to the image_folder plugin.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pipeline {
namespace image_folder_internal {

struct DirectoryListing {
  std::vector<std::string> folders;  // names, unsorted
  std::vector<std::string> images;   // names, unsorted
};

// The subfolders and .jpg/.jpeg/.png files of `dir`, hidden names
// (".x") skipped; `shown` names `dir` in the error when it cannot be listed.
absl::StatusOr<DirectoryListing> ListDirectory(const std::filesystem::path& dir,
                                               const std::string& shown);

// The image files below `class_dir` in the order of torchvision's
// `sorted(os.walk(class_dir, followlinks=True))` with sorted file names:
// folder by folder, folders sorted by their full path string.
//
// Unlike os.walk, a folder is walked once however many links lead to it
// (a link to a parent folder would otherwise be walked forever), and links
// to the dataset root or above it are not followed at all: they would give
// this class every other class's images as well.
absl::Status CollectImages(const std::filesystem::path& class_dir, const std::string& shown,
                           int64_t label, const std::filesystem::path& canonical_root,
                           std::vector<std::string>* paths, std::vector<int64_t>* labels);

}  // namespace image_folder_internal
}  // namespace pipeline

#endif  // PLUGINS_DATASETS_IMAGE_FOLDER_FOLDER_SCAN_H_
