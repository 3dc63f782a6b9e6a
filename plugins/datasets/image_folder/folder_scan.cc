#include "plugins/datasets/image_folder/folder_scan.h"

#include <algorithm>
#include <map>
#include <set>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace pipeline {
namespace image_folder_internal {
namespace {

namespace fs = std::filesystem;

bool IsHidden(const fs::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name[0] == '.';
}

bool IsImageFile(const fs::path& path) {
  const std::string extension = absl::AsciiStrToLower(path.extension().string());
  return extension == ".jpg" || extension == ".jpeg" || extension == ".png";
}

// True when `ancestor` is `path` or one of the folders above it; both are
// canonical.
bool IsSameOrAbove(const fs::path& ancestor, const fs::path& path) {
  auto a = ancestor.begin(), p = path.begin();
  for (; a != ancestor.end(); ++a, ++p) {
    if (p == path.end() || *a != *p) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<DirectoryListing> ListDirectory(const fs::path& dir, const std::string& shown) {
  DirectoryListing listing;
  std::error_code error;
  fs::directory_iterator it(dir, error);
  for (; !error && it != fs::directory_iterator(); it.increment(error)) {
    const fs::path& path = it->path();
    if (IsHidden(path)) continue;
    std::error_code ignored;  // a dangling link is neither; skip it
    if (fs::is_directory(path, ignored)) {
      listing.folders.push_back(path.filename().string());
    } else if (IsImageFile(path) && fs::is_regular_file(path, ignored)) {
      listing.images.push_back(path.filename().string());
    }
  }
  if (error) {
    // Not skipped: an unreadable folder hides an unknown number of samples,
    // and training on the rest would quietly change the dataset.
    return absl::PermissionDeniedError(
        absl::StrCat("cannot list folder ", shown, ": ", error.message(),
                     "; make it readable (chmod a+rx) or move it out of the dataset"));
  }
  return listing;
}

absl::Status CollectImages(const fs::path& class_dir, const std::string& shown, int64_t label,
                           const fs::path& canonical_root, std::vector<std::string>* paths,
                           std::vector<int64_t>* labels) {
  std::map<std::string, std::vector<std::string>> images_by_folder;
  std::set<fs::path> visited;  // canonical paths
  std::vector<std::pair<fs::path, std::string>> pending{{class_dir, shown}};
  while (!pending.empty()) {
    auto [dir, dir_shown] = std::move(pending.back());
    pending.pop_back();
    std::error_code error;
    const fs::path canonical = fs::canonical(dir, error);
    if (!error && !visited.insert(canonical).second) continue;
    if (!error && !canonical_root.empty() && IsSameOrAbove(canonical, canonical_root)) continue;
    auto listing = ListDirectory(dir, dir_shown);
    if (!listing.ok()) return listing.status();
    for (const std::string& folder : listing->folders) {
      pending.emplace_back(dir / folder, (fs::path(dir_shown) / folder).string());
    }
    std::sort(listing->images.begin(), listing->images.end());
    std::vector<std::string>& images = images_by_folder[dir_shown];
    for (const std::string& image : listing->images) {
      images.push_back((dir / image).string());
    }
  }
  for (auto& [folder, images] : images_by_folder) {
    for (std::string& image : images) {
      paths->push_back(std::move(image));
      labels->push_back(label);
    }
  }
  return absl::OkStatus();
}

}  // namespace image_folder_internal
}  // namespace pipeline
