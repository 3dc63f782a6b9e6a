#include "plugins/datasets/webdataset/shard_scan.h"

#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/data/tar_reader.h"
#include "pipeline/util/status_macros.h"
#include "plugins/datasets/webdataset/sample_label.h"

namespace pipeline {
namespace webdataset_internal {
namespace {

// A label member is a number or a small JSON object; a larger one is not
// read whole into memory.
constexpr uint64_t kMaxLabelMemberBytes = 64 << 10;

// The members of one key seen so far.
struct PendingSample {
  std::string key;
  uint64_t first_header = 0;
  std::vector<std::string> names;
  std::optional<TarMember> image, cls, json;
};

std::string Quoted(const std::string& text) { return absl::StrCat("\"", text, "\""); }

class ShardScanner {
 public:
  ShardScanner(int fd, const std::string& shown, uint64_t file_bytes, const LabelRules& rules,
               std::vector<IndexedSample>* samples)
      : fd_(fd), shown_(shown), reader_(fd, shown, file_bytes), rules_(rules), samples_(samples) {}

  absl::Status Run() {
    std::optional<PendingSample> pending;
    while (true) {
      ASSIGN_OR_RETURN(std::optional<TarMember> member, reader_.Next());
      if (!member) break;
      std::string key, extension;
      if (!member->IsRegularFile() || !SplitKey(member->name, &key, &extension)) continue;
      if (pending && pending->key != key) {
        RETURN_IF_ERROR(Finish(*pending));
        pending.reset();
      }
      if (!pending) {
        pending.emplace();
        pending->key = key;
        pending->first_header = member->header_offset;
      }
      RETURN_IF_ERROR(AddMember(std::move(*member), extension, &*pending));
    }
    if (pending) RETURN_IF_ERROR(Finish(*pending));
    return absl::OkStatus();
  }

 private:
  absl::Status AddMember(TarMember member, const std::string& extension, PendingSample* sample) {
    sample->names.push_back(member.name);
    std::optional<TarMember>* slot = nullptr;
    if (extension == "jpg" || extension == "jpeg" || extension == "png") {
      slot = &sample->image;
    } else if (extension == "cls") {
      slot = &sample->cls;
    } else if (extension == "json") {
      slot = &sample->json;
    } else {
      return absl::OkStatus();  // another modality (.txt, .seg.png, ...): not used
    }
    if (*slot) {
      return absl::InvalidArgumentError(
          absl::StrCat(shown_, ": sample ", Quoted(sample->key), " has two ",
                       slot == &sample->image ? "images" : absl::StrCat(".", extension, " members"),
                       ": ", Quoted((*slot)->name), " and ", Quoted(member.name), " (byte ",
                       member.header_offset, ")"));
    }
    *slot = std::move(member);
    return absl::OkStatus();
  }

  std::string Describe(const PendingSample& sample) const {
    return absl::StrCat(shown_, ": sample ", Quoted(sample.key), " (from byte ",
                        sample.first_header, "; members ", absl::StrJoin(sample.names, ", "), ")");
  }

  absl::Status Finish(const PendingSample& sample) {
    // A key seen again after other keys is a sample of its own, as in
    // webdataset; it then usually lacks one of the two.
    const char* adjacent = "; the members of a sample must be adjacent in the tar";
    if (!sample.image) {
      return absl::InvalidArgumentError(
          absl::StrCat(Describe(sample), " has no image member (.jpg, .jpeg or .png)", adjacent));
    }
    const std::optional<TarMember>& label_member = sample.cls ? sample.cls : sample.json;
    if (!label_member) {
      return absl::InvalidArgumentError(absl::StrCat(Describe(sample),
                                                     " has no label member (.cls, or .json with "
                                                     "the field \"",
                                                     rules_.json_label_field, "\")", adjacent));
    }
    ASSIGN_OR_RETURN(const int32_t label, ReadLabel(*label_member, sample.cls.has_value()));
    IndexedSample indexed;
    indexed.image_offset = sample.image->data_offset;
    indexed.image_size = sample.image->size >= kImageTooLarge
                             ? kImageTooLarge
                             : static_cast<uint32_t>(sample.image->size);
    indexed.label = label;
    samples_->push_back(indexed);
    return absl::OkStatus();
  }

  absl::StatusOr<int32_t> ReadLabel(const TarMember& member, bool is_cls) {
    const std::string where = absl::StrCat(shown_, ": label member ", Quoted(member.name),
                                           " (byte ", member.header_offset, "): ");
    if (member.size > kMaxLabelMemberBytes) {
      return absl::InvalidArgumentError(absl::StrCat(where, member.size,
                                                     " bytes is too large for a label (at most ",
                                                     kMaxLabelMemberBytes, ")"));
    }
    ASSIGN_OR_RETURN(const std::string text,
                     ReadFileRange(fd_, shown_, member.data_offset, member.size));
    absl::StatusOr<int32_t> label =
        is_cls ? ParseClsLabel(text)
               : ParseJsonLabel(text, rules_.json_label_field, rules_.class_names);
    if (!label.ok()) {
      return absl::Status(label.status().code(), absl::StrCat(where, label.status().message()));
    }
    return label;
  }

  const int fd_;
  const std::string& shown_;
  TarReader reader_;
  const LabelRules& rules_;
  std::vector<IndexedSample>* samples_;
};

}  // namespace

bool SplitKey(const std::string& name, std::string* key, std::string* extension) {
  const size_t slash = name.rfind('/');
  const size_t base = slash == std::string::npos ? 0 : slash + 1;
  const size_t dot = name.find('.', base);
  if (dot == std::string::npos || dot == base) return false;
  *key = name.substr(0, dot);
  *extension = absl::AsciiStrToLower(name.substr(dot + 1));
  return true;
}

absl::Status ScanShard(int fd, const std::string& shown, uint64_t file_bytes,
                       const LabelRules& rules, std::vector<IndexedSample>* samples) {
  return ShardScanner(fd, shown, file_bytes, rules, samples).Run();
}

}  // namespace webdataset_internal
}  // namespace pipeline
