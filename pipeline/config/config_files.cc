#include "pipeline/config/config_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "pipeline/config/config_text.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;
using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Copies `field` (set in `from`) into `to`, whose copy of it is empty.
void CopyField(const Message& from, const FieldDescriptor* field, Message* to) {
  const Reflection* r = from.GetReflection();
  const Reflection* w = to->GetReflection();
  const int count = field->is_repeated() ? r->FieldSize(from, field) : 1;
  for (int i = 0; i < count; ++i) {
    const bool list = field->is_repeated();
    switch (field->cpp_type()) {
#define PIPELINE_COPY_CASE(CPPTYPE, Type)                                          \
  case FieldDescriptor::CPPTYPE:                                                   \
    list ? w->Add##Type(to, field, r->GetRepeated##Type(from, field, i))           \
         : w->Set##Type(to, field, r->Get##Type(from, field));                     \
    break;
      PIPELINE_COPY_CASE(CPPTYPE_INT32, Int32)
      PIPELINE_COPY_CASE(CPPTYPE_INT64, Int64)
      PIPELINE_COPY_CASE(CPPTYPE_UINT32, UInt32)
      PIPELINE_COPY_CASE(CPPTYPE_UINT64, UInt64)
      PIPELINE_COPY_CASE(CPPTYPE_DOUBLE, Double)
      PIPELINE_COPY_CASE(CPPTYPE_FLOAT, Float)
      PIPELINE_COPY_CASE(CPPTYPE_BOOL, Bool)
      PIPELINE_COPY_CASE(CPPTYPE_ENUM, EnumValue)
      PIPELINE_COPY_CASE(CPPTYPE_STRING, String)
#undef PIPELINE_COPY_CASE
      case FieldDescriptor::CPPTYPE_MESSAGE:
        if (list) {
          w->AddMessage(to, field)->CopyFrom(r->GetRepeatedMessage(from, field, i));
        } else {
          w->MutableMessage(to, field)->CopyFrom(r->GetMessage(from, field));
        }
        break;
    }
  }
}

absl::StatusOr<PipelineConfig> LoadWithImports(const fs::path& path,
                                               std::vector<std::string>& stack,
                                               bool lenient = false) {
  std::error_code error;
  const std::string canonical = fs::weakly_canonical(path, error).string();
  for (const std::string& open : stack) {
    if (open == canonical) {
      stack.push_back(canonical);
      return absl::InvalidArgumentError(
          absl::StrCat("import cycle: ", absl::StrJoin(stack, " imports ")));
    }
  }
  std::ifstream file(path);
  if (!file) {
    return absl::NotFoundError(absl::StrCat(path.string(), ": cannot read the config file"));
  }
  std::stringstream text;
  text << file.rdbuf();
  PipelineConfig config;
  if (auto status = ParseConfigText(text.str(), path.string(), lenient, &config); !status.ok()) {
    return status;
  }
  stack.push_back(canonical);
  PipelineConfig merged;
  for (const std::string& import : config.import()) {
    const fs::path import_path = fs::path(import).is_absolute() ? fs::path(import)
                                                                : path.parent_path() / import;
    auto base = LoadWithImports(import_path, stack, lenient);
    if (!base.ok()) {
      return absl::Status(base.status().code(),
                          absl::StrCat(base.status().message(), "\n  imported from ",
                                       path.string()));
    }
    MergeConfigOver(*base, &merged);
  }
  stack.pop_back();
  config.clear_import();
  MergeConfigOver(config, &merged);
  return merged;
}

}  // namespace

void MergeConfigOver(const Message& top, Message* base) {
  const Reflection* from = top.GetReflection();
  const Reflection* to = base->GetReflection();
  std::vector<const FieldDescriptor*> fields;
  from->ListFields(top, &fields);
  for (const FieldDescriptor* field : fields) {
    if (!field->is_repeated() && field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
        field->message_type()->full_name() != "google.protobuf.Any") {
      MergeConfigOver(from->GetMessage(top, field), to->MutableMessage(base, field));
      continue;
    }
    // Lists are replaced, not appended to; a plugin's options (an Any) are
    // replaced whole, since they belong to the plugin named beside them.
    to->ClearField(base, field);
    CopyField(top, field, base);
  }
}

absl::StatusOr<PipelineConfig> LoadConfigFile(const std::string& path) {
  std::vector<std::string> stack;
  return LoadWithImports(path, stack);
}

absl::StatusOr<std::vector<std::string>> ReadPluginLibraries(const std::string& path) {
  std::vector<std::string> stack;
  auto config = LoadWithImports(path, stack, /*lenient=*/true);
  if (!config.ok()) return config.status();
  return std::vector<std::string>(config->plugin_libraries().begin(),
                                  config->plugin_libraries().end());
}

absl::StatusOr<std::string> ResolveConfigPath(const std::string& name,
                                              const std::string& working_dir,
                                              const std::string& workspace_dir) {
  if (name.empty()) {
    return absl::InvalidArgumentError(
        "--config: no config given; e.g. --config=configs/single.textproto");
  }
  std::vector<fs::path> candidates;
  const fs::path given(name);
  if (given.is_absolute()) {
    candidates.push_back(given);
  } else {
    for (const std::string& dir : {working_dir, workspace_dir}) {
      if (!dir.empty()) candidates.push_back(fs::path(dir) / given);
    }
    if (!workspace_dir.empty() && !absl::StrContains(name, "/")) {
      candidates.push_back(fs::path(workspace_dir) / "configs" / given);
      candidates.push_back(fs::path(workspace_dir) / "configs" / (name + ".textproto"));
    }
  }
  std::error_code error;
  std::vector<std::string> tried;
  for (const fs::path& candidate : candidates) {
    if (fs::is_regular_file(candidate, error)) return candidate.string();
    tried.push_back(candidate.string());
  }
  std::string available;
  if (!workspace_dir.empty() && fs::is_directory(fs::path(workspace_dir) / "configs", error)) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(fs::path(workspace_dir) / "configs", error)) {
      if (entry.path().extension() == ".textproto") names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    available = absl::StrCat("; configs/ holds: ", absl::StrJoin(names, ", "));
  }
  return absl::NotFoundError(absl::StrCat("--config=", name, ": no such file (looked at ",
                                          absl::StrJoin(tried, ", "), ")", available));
}

}  // namespace pipeline
