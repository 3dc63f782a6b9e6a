#include "plugins/datasets/image_folder/image_folder_dataset.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace image_folder_internal {
namespace {

namespace fs = std::filesystem;

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

}  // namespace

std::unique_ptr<Dataset> MakeImageFolderDataset(std::vector<std::string> paths,
                                                std::vector<int64_t> labels,
                                                std::vector<std::string> class_names,
                                                DecodeOptions decode_options,
                                                int64_t cache_bytes) {
  return std::make_unique<ImageFolderDataset>(std::move(paths), std::move(labels),
                                              std::move(class_names), decode_options,
                                              cache_bytes);
}

}  // namespace image_folder_internal
}  // namespace pipeline
