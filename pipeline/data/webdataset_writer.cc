#include "pipeline/data/webdataset_writer.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pipeline/data/tar_reader.h"
#include "pipeline/util/durable_file.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;

// What a member adds to a tar: its header and its padded data.
uint64_t MemberBytes(uint64_t data_bytes) { return kTarBlockBytes + TarPaddedSize(data_bytes); }

absl::Status CheckKey(absl::string_view key) {
  const size_t slash = key.rfind('/');
  const absl::string_view base = slash == absl::string_view::npos ? key : key.substr(slash + 1);
  if (base.empty() || absl::StrContains(base, '.')) {
    return absl::InvalidArgumentError(
        absl::StrCat("webdataset key \"", key,
                     "\": the file name part must be non-empty and without a '.' "
                     "(the key of a member ends at the first dot of its name)"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string WebDatasetShardName(const std::string& prefix, int64_t shard) {
  return absl::StrFormat("%s-%06d.tar", prefix, shard);
}

WebDatasetWriter::WebDatasetWriter(WebDatasetWriterOptions options)
    : options_(std::move(options)) {}

WebDatasetWriter::~WebDatasetWriter() {
  if (tar_ == nullptr) return;
  tar_.reset();
  std::error_code ignored;
  fs::remove(temporary_, ignored);
}

absl::Status WebDatasetWriter::StartShard() {
  const std::string name =
      WebDatasetShardName(options_.prefix, static_cast<int64_t>(shards_.size()));
  shards_.push_back((fs::path(options_.folder) / name).string());
  temporary_ = (fs::path(options_.folder) / absl::StrCat(".", name, ".tmp")).string();
  tar_ = std::make_unique<TarWriter>(temporary_, shards_.back());
  index_ = ShardIndex{};
  return absl::OkStatus();
}

absl::Status WebDatasetWriter::CloseShard() {
  absl::Status finished = tar_->Finish();
  index_.shard_bytes = tar_->bytes() + 2 * kTarBlockBytes;
  tar_.reset();
  if (!finished.ok()) {
    std::error_code ignored;
    fs::remove(temporary_, ignored);
    return finished;
  }
  RETURN_IF_ERROR(RenameOver(temporary_, shards_.back()));
  // After the shard, so the index is never older than it.
  if (!options_.write_index) return absl::OkStatus();
  return WriteShardIndex(ShardIndexPath(shards_.back()), index_);
}

absl::Status WebDatasetWriter::Add(absl::string_view key, absl::string_view image_extension,
                                   absl::string_view image_bytes, int32_t label) {
  RETURN_IF_ERROR(CheckKey(key));
  if (label < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("webdataset key \"", key, "\": label ", label, " is negative"));
  }
  const std::string label_text = absl::StrCat(label);
  const uint64_t sample_bytes = MemberBytes(image_bytes.size()) + MemberBytes(label_text.size());
  if (tar_ != nullptr) {
    const bool too_large =
        options_.max_shard_bytes > 0 &&
        tar_->bytes() + sample_bytes + 2 * kTarBlockBytes > options_.max_shard_bytes;
    const bool too_many =
        options_.max_samples_per_shard > 0 &&
        static_cast<int64_t>(index_.samples.size()) >= options_.max_samples_per_shard;
    if (too_large || too_many) RETURN_IF_ERROR(CloseShard());
  }
  if (tar_ == nullptr) RETURN_IF_ERROR(StartShard());
  ASSIGN_OR_RETURN(const uint64_t image_offset,
                   tar_->Add(absl::StrCat(key, ".", image_extension), image_bytes));
  RETURN_IF_ERROR(tar_->Add(absl::StrCat(key, ".cls"), label_text).status());
  IndexedSample sample;
  sample.image_offset = image_offset;
  sample.image_size = image_bytes.size() >= kImageTooLarge
                          ? kImageTooLarge
                          : static_cast<uint32_t>(image_bytes.size());
  sample.label = label;
  index_.samples.push_back(sample);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> WebDatasetWriter::Finish() {
  if (tar_ != nullptr) RETURN_IF_ERROR(CloseShard());
  return shards_;
}

}  // namespace pipeline
