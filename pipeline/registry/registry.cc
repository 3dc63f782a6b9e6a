#include "pipeline/registry/registry.h"

#include <set>

#include <cstdio>
#include <cstdlib>

#include "google/protobuf/any.pb.h"
#include "google/protobuf/text_format.h"

namespace pipeline {

RegistryIndex& RegistryIndex::Global() {
  static RegistryIndex* index = new RegistryIndex();
  return *index;
}

void RegistryIndex::Add(const std::string& kind, Lister lister) {
  listers_[kind] = std::move(lister);
}

std::vector<PluginInfo> RegistryIndex::ListAll() const {
  std::vector<PluginInfo> all;
  for (const auto& [kind, lister] : listers_) {
    for (PluginInfo& info : lister()) all.push_back(std::move(info));
  }
  return all;
}

std::vector<std::string> PluginsWithOptionField(const std::string& options_type,
                                                const std::string& field) {
  const std::vector<PluginInfo> all = RegistryIndex::Global().ListAll();
  std::set<std::string> kinds;
  for (const PluginInfo& info : all) {
    if (info.options_type == options_type) kinds.insert(info.kind);
  }
  std::vector<std::string> plugins;
  for (const PluginInfo& info : all) {
    if (!kinds.count(info.kind) || info.options_type == options_type) continue;
    const google::protobuf::Descriptor* descriptor =
        google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(
            info.options_type);
    if (descriptor != nullptr && descriptor->FindFieldByName(field) != nullptr) {
      plugins.push_back(absl::StrCat(info.kind, " \"", info.name, "\""));
    }
  }
  return plugins;
}

absl::Status UnpackPluginOptions(const std::string& kind, const std::string& name,
                                 const google::protobuf::Any& config_options,
                                 google::protobuf::Message* options) {
  if (config_options.type_url().empty()) return absl::OkStatus();
  const std::string expected = options->GetDescriptor()->full_name();
  std::string got;
  if (!google::protobuf::Any::ParseAnyTypeUrl(config_options.type_url(), &got) ||
      got != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("options: ", kind, " \"", name, "\" takes options of type ",
                     expected, " but the config gives ", got.empty() ? "an unknown type" : got,
                     "; write options { [type.googleapis.com/", expected, "] { ... } }"));
  }
  if (!config_options.UnpackTo(options)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options: could not decode the ", expected, " of ", kind, " \"",
                     name, "\""));
  }
  return absl::OkStatus();
}

std::string DescribeOptions(const google::protobuf::Message& options) {
  // Every field with its default, including unset ones, so --list_plugins
  // shows what can be set.
  std::string text;
  const auto* descriptor = options.GetDescriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const auto* field = descriptor->field(i);
    absl::StrAppend(&text, "    ", field->name(), ": ");
    if (field->is_repeated()) {
      absl::StrAppend(&text, "[repeated ", field->type_name(), "]");
    } else if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
      absl::StrAppend(&text, "{", field->message_type()->full_name(), "}");
    } else {
      std::string value;
      google::protobuf::TextFormat::PrintFieldValueToString(options, field, -1, &value);
      absl::StrAppend(&text, value);
    }
    absl::StrAppend(&text, "\n");
  }
  return text;
}

namespace {
// Non-null while a plugin library loads. A plain pointer, so it is valid
// before any static initialiser of the binary has run.
std::vector<std::function<absl::Status()>>* held_registrations = nullptr;
}  // namespace

void SubmitRegistration(std::function<absl::Status()> registration) {
  if (held_registrations != nullptr) {
    held_registrations->push_back(std::move(registration));
    return;
  }
  const absl::Status status = registration();
  if (status.ok()) return;
  std::fprintf(stderr, "error: %s\n", std::string(status.message()).c_str());
  std::exit(2);
}

void BeginHoldingRegistrations() {
  if (held_registrations == nullptr) {
    held_registrations = new std::vector<std::function<absl::Status()>>();
  }
}

std::vector<std::function<absl::Status()>> EndHoldingRegistrations() {
  std::vector<std::function<absl::Status()>> held;
  if (held_registrations != nullptr) {
    held = std::move(*held_registrations);
    delete held_registrations;
    held_registrations = nullptr;
  }
  return held;
}

}  // namespace pipeline
