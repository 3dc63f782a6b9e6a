// dataset `webdataset`: tar shards in the layout of the Python `webdataset`
// package (docs/webdataset.md). Members group into samples by key: the
// member path up to the first dot of its file name, so
// `train/n01440764_10026.jpg` and `train/n01440764_10026.cls` are the sample
// `train/n01440764_10026`. Each sample needs one image (.jpg, .jpeg, .png)
// and a label: its .cls member, else the `json_label_field` of its .json
// member.
//
// Indexed reading: when the dataset is made, each shard's member offsets are
// read once (from `<shard>.idx` where prepare_data wrote a current one, else
// by walking the tar headers, skipping the data), and 16 bytes per sample
// stay in memory. Get(i) is then one pread and a decode, from any thread,
// so the samplers, distributed evaluation and exact mid-epoch resume work
// as on any other dataset. Streaming (shard shuffling, a shuffle buffer) is
// not built.
//
//   train_data {
//     dataset {
//       name: "webdataset"
//       options { [type.googleapis.com/pipeline.WebDatasetOptions] {
//         shards: "data/fashion_mnist_wds/train-{000000..000003}.tar" } }
//     }
//   }

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "pipeline/image/image_codec.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/util/durable_file.h"
#include "pipeline/util/status_macros.h"
#include "plugins/datasets/webdataset/shard_list.h"
#include "plugins/datasets/webdataset/shard_scan.h"
#include "plugins/datasets/webdataset/shard_set.h"
#include "plugins/datasets/webdataset/webdataset.pb.h"
#include "plugins/datasets/webdataset/webdataset_dataset.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;

using webdataset_internal::ImageMemberName;
using webdataset_internal::ListShards;
using webdataset_internal::MakeWebDataset;
using webdataset_internal::OpenShards;
using webdataset_internal::ShardSet;
using webdataset_internal::ShardSetOptions;
using webdataset_internal::SplitKey;

DecodeOptions::Color ToDecodeColor(WebDatasetOptions::Color color) {
  switch (color) {
    case WebDatasetOptions::GRAY:
      return DecodeOptions::GRAY;
    case WebDatasetOptions::RGB:
      return DecodeOptions::RGB;
    case WebDatasetOptions::KEEP:
      break;
  }
  return DecodeOptions::KEEP;
}

struct ClassNames {
  std::vector<std::string> names;  // empty: from the labels found
  std::string source;              // for messages
};

// `classes.txt`: one name per line, line i naming label i.
absl::StatusOr<std::vector<std::string>> ReadClassesFile(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadWholeFile(path));
  std::vector<std::string> names = absl::StrSplit(text, '\n');
  while (!names.empty() && absl::StripAsciiWhitespace(names.back()).empty()) names.pop_back();
  std::set<std::string> seen;
  for (size_t line = 0; line < names.size(); ++line) {
    absl::StripTrailingAsciiWhitespace(&names[line]);  // "\r" of a Windows editor too
    if (names[line].empty() || !seen.insert(names[line]).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": line ", line + 1, names[line].empty() ? " is empty" : " repeats a class name",
          "; each line names the class of the label one less than its line number"));
    }
  }
  return names;
}

absl::StatusOr<ClassNames> FindClassNames(const WebDatasetOptions& options,
                                          const std::string& first_shard) {
  if (options.class_names_size() > 0) {
    return ClassNames{{options.class_names().begin(), options.class_names().end()}, "class_names"};
  }
  const std::string path = (fs::path(first_shard).parent_path() / "classes.txt").string();
  std::error_code error;
  if (!fs::exists(path, error)) return ClassNames{};
  ASSIGN_OR_RETURN(std::vector<std::string> names, ReadClassesFile(path));
  return ClassNames{std::move(names), path};
}

// Every label names a class; without class names, "0".."N-1".
absl::Status CheckLabels(const ShardSet& shards, ClassNames* classes) {
  if (classes->names.empty()) {
    int32_t largest = -1;
    for (const IndexedSample& sample : shards.samples) largest = std::max(largest, sample.label);
    for (int32_t label = 0; label <= largest; ++label) {
      classes->names.push_back(absl::StrCat(label));
    }
    return absl::OkStatus();
  }
  const int64_t count = static_cast<int64_t>(classes->names.size());
  for (size_t i = 0; i < shards.samples.size(); ++i) {
    const int32_t label = shards.samples[i].label;
    if (label < count) continue;
    const int64_t index = static_cast<int64_t>(i);
    const std::string& shard = shards.paths[shards.ShardOf(index)];
    absl::StatusOr<std::string> member = ImageMemberName(shards, index);
    std::string key, extension;
    const std::string sample =
        member.ok() && SplitKey(*member, &key, &extension)
            ? absl::StrCat("sample \"", key, "\"")
            : absl::StrCat("the sample whose image is at byte ", shards.samples[i].image_offset);
    return absl::InvalidArgumentError(absl::StrCat(shard, ": ", sample, " has label ", label,
                                                   ", out of range of the ", count,
                                                   " class names (from ", classes->source, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Dataset>> CreateWebDataset(const WebDatasetOptions& options,
                                                          const DatasetContext& context) {
  ASSIGN_OR_RETURN(const std::vector<std::string> paths, ListShards(options));
  ASSIGN_OR_RETURN(ClassNames classes, FindClassNames(options, paths.front()));
  ShardSetOptions shard_options;
  shard_options.label_rules.json_label_field = options.json_label_field();
  shard_options.label_rules.class_names = classes.names;
  shard_options.use_index = options.use_index();
  ASSIGN_OR_RETURN(ShardSet shards, OpenShards(paths, shard_options));
  if (shards.samples.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the ", paths.size(), paths.size() == 1 ? " shard holds" : " shards hold",
        " no samples (members named <key>.<jpg|jpeg|png> with <key>.<cls|json>), starting with ",
        paths.front()));
  }
  RETURN_IF_ERROR(CheckLabels(shards, &classes));
  return MakeWebDataset(std::move(shards), std::move(classes.names),
                        DecodeOptions{ToDecodeColor(options.color())});
}

absl::Status ValidateWebDataset(const WebDatasetOptions& options) {
  RETURN_IF_ERROR(webdataset_internal::CheckShardOptions(options));
  std::set<std::string> seen;
  for (const std::string& name : options.class_names()) {
    if (name.empty()) return absl::InvalidArgumentError("class_names: an empty name");
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("class_names: \"", name, "\" is listed twice"));
    }
  }
  if (options.json_label_field().empty()) {
    return absl::InvalidArgumentError(
        "json_label_field: empty; name the .json field that holds the label (default "
        "\"label\")");
  }
  return absl::OkStatus();
}

PIPELINE_REGISTER_PLUGIN(Dataset, "webdataset", WebDatasetOptions,
                         "webdataset tar shards (<key>.jpg|png + <key>.cls|json), indexed once, "
                         "decoded on Get()",
                         CreateWebDataset, ValidateWebDataset);

}  // namespace
}  // namespace pipeline
