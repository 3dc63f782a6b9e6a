#include "plugins/datasets/webdataset/webdataset_dataset.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "pipeline/data/tar_reader.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace webdataset_internal {
namespace {

// One sample's image member: its bytes and, for messages, where it is.
struct ImageMember {
  std::string bytes;
  std::string name;  // "<shard>:<member name>"
};

class WebDataset : public Dataset {
 public:
  WebDataset(ShardSet shards, std::vector<std::string> class_names, DecodeOptions decode_options)
      : shards_(std::move(shards)),
        class_names_(std::move(class_names)),
        decode_options_(decode_options) {}

  int64_t size() const override { return static_cast<int64_t>(shards_.samples.size()); }

  absl::StatusOr<Sample> Get(int64_t index) const override {
    ASSIGN_OR_RETURN(const ImageMember member, ReadImage(index));
    ASSIGN_OR_RETURN(Image image, DecodeImage(member.bytes, member.name, decode_options_));
    return Sample{std::move(image), Label(index)};
  }

  absl::StatusOr<Sample> GetRegion(int64_t index, const RegionPlan& plan,
                                   ImageRegion* region_in_image) const override {
    ASSIGN_OR_RETURN(const ImageMember member, ReadImage(index));
    ASSIGN_OR_RETURN(Image image, DecodeImageRegion(member.bytes, member.name, decode_options_,
                                                    plan, region_in_image));
    return Sample{std::move(image), Label(index)};
  }

  const std::vector<std::string>& class_names() const override { return class_names_; }

  std::string SampleName(int64_t index) const override {
    if (index < 0 || index >= size()) return Dataset::SampleName(index);
    absl::StatusOr<std::string> name = ImageMemberName(shards_, index);
    const std::string& shard = shards_.paths[shards_.ShardOf(index)];
    return name.ok() ? absl::StrCat(shard, ":", *name)
                     : absl::StrCat(shard, ":byte ", shards_.samples[index].image_offset);
  }

 private:
  int64_t Label(int64_t index) const { return shards_.samples[index].label; }

  absl::StatusOr<ImageMember> ReadImage(int64_t index) const {
    if (index < 0 || index >= size()) {
      return absl::OutOfRangeError(absl::StrCat("sample ", index, " of ", size()));
    }
    const IndexedSample& sample = shards_.samples[index];
    const size_t shard = shards_.ShardOf(index);
    const std::string& path = shards_.paths[shard];
    const uint64_t header_offset = sample.image_offset - kTarBlockBytes;
    if (sample.image_size == kImageTooLarge || sample.image_size > kMaxImageFileBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": the image member at byte ", header_offset, " is too large for an image (",
          sample.image_size == kImageTooLarge ? "4 GiB or more"
                                              : absl::StrCat(sample.image_size, " bytes"),
          "; the limit is ", kMaxImageFileBytes, " bytes)"));
    }
    // The header with the data: one read, and proof the member is still
    // the one indexed.
    ASSIGN_OR_RETURN(std::string bytes,
                     ReadFileRange(shards_.descriptors[shard], path, header_offset,
                                   kTarBlockBytes + sample.image_size));
    absl::StatusOr<TarHeaderFields> header = ParseTarHeader(bytes.data());
    if (!header.ok() || header->size != sample.image_size) {
      return absl::DataLossError(absl::StrCat(
          path, ": byte ", header_offset, " no longer holds the header of the ", sample.image_size,
          "-byte image member indexed there; the shard changed after it "
          "was indexed (rewrite its .idx, or restart to scan it again)"));
    }
    ImageMember member;
    member.name = absl::StrCat(path, ":", header->name);
    bytes.erase(0, kTarBlockBytes);
    member.bytes = std::move(bytes);
    return member;
  }

  // Read-only after construction: Get() runs on many threads at once.
  const ShardSet shards_;
  const std::vector<std::string> class_names_;
  const DecodeOptions decode_options_;
};

}  // namespace

std::unique_ptr<Dataset> MakeWebDataset(ShardSet shards, std::vector<std::string> class_names,
                                        DecodeOptions decode_options) {
  return std::make_unique<WebDataset>(std::move(shards), std::move(class_names), decode_options);
}

}  // namespace webdataset_internal
}  // namespace pipeline
