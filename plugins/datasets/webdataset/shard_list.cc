#include "plugins/datasets/webdataset/shard_list.h"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "pipeline/util/durable_file.h"
#include "pipeline/util/status_macros.h"
#include "plugins/datasets/webdataset/brace_expand.h"

namespace pipeline {
namespace webdataset_internal {
namespace {

namespace fs = std::filesystem;

// Each name with where it came from, for the error about a name given twice.
struct Named {
  std::string path;
  std::string source;
};

absl::StatusOr<std::vector<Named>> FromPatterns(const WebDatasetOptions& options) {
  std::vector<Named> shards;
  for (int i = 0; i < options.shards_size(); ++i) {
    const std::string field = absl::StrCat("shards[", i, "]");
    absl::StatusOr<std::vector<std::string>> names = ExpandBraces(options.shards(i));
    if (!names.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": ", names.status().message()));
    }
    for (const std::string& name : *names) shards.push_back({FromWorkingDirectory(name), field});
  }
  return shards;
}

absl::StatusOr<std::vector<Named>> FromListFile(const std::string& list) {
  const std::string path = FromWorkingDirectory(list);
  absl::StatusOr<std::string> text = ReadWholeFile(path);
  if (!text.ok()) {
    return absl::NotFoundError(absl::StrCat("shard_list: ", path, ": cannot read the file"));
  }
  const fs::path folder = fs::path(path).parent_path();
  std::vector<Named> shards;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    const fs::path shard(std::string{line});
    shards.push_back({(shard.is_absolute() ? shard : folder / shard).string(),
                      absl::StrCat("shard_list ", path, " line ", line_number)});
  }
  if (shards.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shard_list: ", path, " names no shards (one path per line, relative to its folder)"));
  }
  return shards;
}

}  // namespace

std::string FromWorkingDirectory(const std::string& path) {
  const char* working_directory = std::getenv("BUILD_WORKING_DIRECTORY");
  if (fs::path(path).is_relative() && working_directory != nullptr && *working_directory != '\0') {
    return (fs::path(working_directory) / path).string();
  }
  return path;
}

absl::Status CheckShardOptions(const WebDatasetOptions& options) {
  const bool has_patterns = options.shards_size() > 0;
  const bool has_list = options.has_shard_list();
  if (has_patterns == has_list) {
    const char* what = has_patterns ? "shards and shard_list are both set"
                                    : "no shards: neither shards nor shard_list is set";
    return absl::InvalidArgumentError(
        absl::StrCat(what,
                     "; set one, e.g. shards: \"/data/train-{000000..000009}.tar\" or "
                     "shard_list: \"/data/train.txt\""));
  }
  if (has_list && options.shard_list().empty()) {
    return absl::InvalidArgumentError("shard_list: empty; name a file listing the shards");
  }
  for (int i = 0; i < options.shards_size(); ++i) {
    if (options.shards(i).empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("shards[", i, "]: empty; name shard files, e.g. \"train-{0..9}.tar\""));
    }
    absl::StatusOr<std::vector<std::string>> names = ExpandBraces(options.shards(i));
    if (!names.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("shards[", i, "]: ", names.status().message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ListShards(const WebDatasetOptions& options) {
  RETURN_IF_ERROR(CheckShardOptions(options));
  ASSIGN_OR_RETURN(const std::vector<Named> named, options.shards_size() > 0
                                                       ? FromPatterns(options)
                                                       : FromListFile(options.shard_list()));
  // A shard named twice would give its samples twice as often.
  std::map<std::string, const Named*> seen;
  std::vector<std::string> paths;
  for (const Named& shard : named) {
    const std::string normal = fs::path(shard.path).lexically_normal().string();
    const auto [it, added] = seen.emplace(normal, &shard);
    if (!added) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", shard.path, " is named twice (",
                                                     it->second->source, " and ", shard.source,
                                                     ")"));
    }
    paths.push_back(shard.path);
  }
  return paths;
}

}  // namespace webdataset_internal
}  // namespace pipeline
