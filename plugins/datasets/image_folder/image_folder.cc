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
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/image/image_codec.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/util/edit_distance.h"
#include "pipeline/util/status_macros.h"
#include "plugins/datasets/image_folder/image_folder.pb.h"

namespace pipeline {
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

struct DirectoryListing {
  std::vector<std::string> folders;  // names, unsorted
  std::vector<std::string> images;   // names, unsorted
};

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

// True when `ancestor` is `path` or one of the folders above it; both are
// canonical.
bool IsSameOrAbove(const fs::path& ancestor, const fs::path& path) {
  auto a = ancestor.begin(), p = path.begin();
  for (; a != ancestor.end(); ++a, ++p) {
    if (p == path.end() || *a != *p) return false;
  }
  return true;
}

// The image files below `class_dir` in the order of torchvision's
// `sorted(os.walk(class_dir, followlinks=True))` with sorted file names:
// folder by folder, folders sorted by their full path string.
//
// Unlike os.walk, a folder is walked once however many links lead to it
// (a link to a parent folder would otherwise be walked forever), and links
// to the dataset root or above it are not followed at all: they would give
// this class every other class's images as well.
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

// Decoded images kept after their first decode, until they fill the budget
// (cache_decoded_mb). Many loader threads look up and fill it at once; a
// kept image is never changed or dropped, so a lookup hands out a shared
// pointer and copies outside the lock.
class DecodedCache {
 public:
  DecodedCache(int64_t budget_bytes, size_t samples)
      : budget_bytes_(budget_bytes), images_(budget_bytes > 0 ? samples : 0) {}

  bool enabled() const { return budget_bytes_ > 0; }

  std::shared_ptr<const Image> Find(int64_t index) const {
    if (!enabled()) return nullptr;
    std::lock_guard<std::mutex> lock(mutex_);
    return images_[static_cast<size_t>(index)];
  }

  // Whether images are still taken: false once one did not fit, so that a
  // full cache stops asking for whole decodes.
  bool AcceptsMore() const {
    if (!enabled()) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    return !full_;
  }

  void Insert(int64_t index, const Image& image) {
    if (!enabled()) return;
    const int64_t bytes = ImageBytes(image);
    std::lock_guard<std::mutex> lock(mutex_);
    std::shared_ptr<const Image>& slot = images_[static_cast<size_t>(index)];
    if (slot != nullptr) return;
    if (used_bytes_ + bytes > budget_bytes_) {
      full_ = true;
      return;
    }
    slot = std::make_shared<const Image>(image);
    used_bytes_ += bytes;
  }

  static int64_t ImageBytes(const Image& image) {
    return static_cast<int64_t>(image.u8.size() + image.f32.size() * sizeof(float));
  }

 private:
  const int64_t budget_bytes_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const Image>> images_;  // guarded by mutex_
  int64_t used_bytes_ = 0;                             // guarded by mutex_
  bool full_ = false;                                  // guarded by mutex_
};

// `region` of `image`, which it lies inside of, as an image of its own.
Image CopyRegion(const Image& image, const ImageRegion& region) {
  Image out;
  out.height = region.height;
  out.width = region.width;
  out.channels = image.channels;
  const size_t row = static_cast<size_t>(region.width) * image.channels;
  out.u8.resize(static_cast<size_t>(region.height) * row);
  for (int y = 0; y < region.height; ++y) {
    const uint8_t* from = image.u8.data() +
                          (static_cast<size_t>(region.top + y) * image.width + region.left) *
                              image.channels;
    std::copy(from, from + row, out.u8.data() + static_cast<size_t>(y) * row);
  }
  return out;
}

class ImageFolderDataset : public Dataset {
 public:
  ImageFolderDataset(std::vector<std::string> paths, std::vector<int64_t> labels,
                     std::vector<std::string> class_names, DecodeOptions decode_options,
                     int64_t cache_bytes)
      : paths_(std::move(paths)),
        labels_(std::move(labels)),
        class_names_(std::move(class_names)),
        decode_options_(decode_options),
        cache_(cache_bytes, paths_.size()) {}

  int64_t size() const override { return static_cast<int64_t>(paths_.size()); }

  absl::StatusOr<Sample> Get(int64_t index) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<const Image> kept, FindKept(index));
    if (kept != nullptr) return Sample{*kept, labels_[index]};
    ASSIGN_OR_RETURN(Image image, DecodeWhole(index));
    return Sample{std::move(image), labels_[index]};
  }

  absl::StatusOr<Sample> GetRegion(int64_t index, const RegionPlan& plan,
                                   ImageRegion* region_in_image) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<const Image> kept, FindKept(index));
    // While the cache has room, the first decode is a whole one, so later
    // epochs find the image whatever region they want; the crop of a whole
    // decode is the region decode's pixels exactly (image_codec_test).
    std::optional<Image> whole;
    if (kept == nullptr && cache_.AcceptsMore()) {
      ASSIGN_OR_RETURN(whole, DecodeWhole(index));
    }
    const Image* source = kept != nullptr ? kept.get() : whole ? &*whole : nullptr;
    if (source != nullptr) {  // decoders give uint8 pixels
      const ImageRegion region = plan(source->height, source->width);
      const bool inside = region.top >= 0 && region.left >= 0 && region.height > 0 &&
                          region.width > 0 && region.top + region.height <= source->height &&
                          region.left + region.width <= source->width;
      if (!inside) {  // the transform deals with it, as with any dataset
        *region_in_image = region;
        return Sample{*source, labels_[index]};
      }
      *region_in_image = ImageRegion{0, 0, region.height, region.width};
      return Sample{CopyRegion(*source, region), labels_[index]};
    }
    ASSIGN_OR_RETURN(const std::string bytes, ReadFile(index));
    ASSIGN_OR_RETURN(Image image, DecodeImageRegion(bytes, paths_[index], decode_options_, plan,
                                                    region_in_image));
    return Sample{std::move(image), labels_[index]};
  }

  const std::vector<std::string>& class_names() const override { return class_names_; }

  std::string SampleName(int64_t index) const override {
    return index >= 0 && index < size() ? paths_[index] : Dataset::SampleName(index);
  }

 private:
  absl::Status CheckIndex(int64_t index) const {
    if (index < 0 || index >= size()) {
      return absl::OutOfRangeError(absl::StrCat("sample ", index, " of ", size()));
    }
    return absl::OkStatus();
  }

  // The kept decode of sample `index`, or null.
  absl::StatusOr<std::shared_ptr<const Image>> FindKept(int64_t index) const {
    RETURN_IF_ERROR(CheckIndex(index));
    return cache_.Find(index);
  }

  // Decodes the whole of sample `index`, and keeps it while the cache has
  // room.
  absl::StatusOr<Image> DecodeWhole(int64_t index) const {
    ASSIGN_OR_RETURN(const std::string bytes, ReadFile(index));
    ASSIGN_OR_RETURN(Image image, DecodeImage(bytes, paths_[index], decode_options_));
    cache_.Insert(index, image);
    return image;
  }

  // The bytes of sample `index`'s file.
  absl::StatusOr<std::string> ReadFile(int64_t index) const {
    RETURN_IF_ERROR(CheckIndex(index));
    const std::string& path = paths_[index];
    // errno is per thread; std::error_code's message, unlike strerror, is
    // safe to build on many loader threads at once.
    std::ifstream file(path, std::ios::binary);
    if (!file) {
      const int open_errno = errno;
      return absl::Status(
          open_errno == EACCES ? absl::StatusCode::kPermissionDenied : absl::StatusCode::kNotFound,
          absl::StrCat(path, ": cannot open: ",
                       std::error_code(open_errno, std::generic_category()).message()));
    }
    // The whole file is read before decoding; a huge one (a disk image or
    // video with an image's name) must not be.
    std::error_code size_error;
    const uintmax_t file_bytes = fs::file_size(path, size_error);
    if (!size_error && file_bytes > static_cast<uintmax_t>(kMaxImageFileBytes)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": file too large for an image: ", file_bytes, " bytes (the limit is ",
          kMaxImageFileBytes, " bytes)"));
    }
    std::ostringstream bytes;
    bytes << file.rdbuf();
    if (file.bad()) {
      return absl::DataLossError(absl::StrCat(
          path, ": read error: ", std::error_code(errno, std::generic_category()).message()));
    }
    return bytes.str();
  }

  // Read-only after construction: Get() runs on many threads at once.
  const std::vector<std::string> paths_;
  const std::vector<int64_t> labels_;
  const std::vector<std::string> class_names_;
  const DecodeOptions decode_options_;
  mutable DecodedCache cache_;  // safe to fill from many threads
};

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
  return std::make_unique<ImageFolderDataset>(std::move(paths), std::move(labels),
                                              input.class_names, decode, /*cache_bytes=*/0);
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
  return std::make_unique<ImageFolderDataset>(std::move(paths), std::move(labels),
                                              std::move(class_names),
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
