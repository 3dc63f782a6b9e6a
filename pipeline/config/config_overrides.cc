#include "pipeline/config/config_overrides.h"

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/text_format.h"
#include "pipeline/config/config_text.h"
#include "pipeline/config/moved_model_options.h"
#include "pipeline/util/edit_distance.h"

namespace pipeline {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// The text to parse as the value of `field`: strings may be given bare.
std::string ValueText(const FieldDescriptor* field, const std::string& value) {
  if (field->type() == FieldDescriptor::TYPE_STRING && !absl::StartsWith(value, "\"") &&
      !absl::StartsWith(value, "'") && !absl::StartsWith(value, "[")) {
    return absl::StrCat("\"", absl::CEscape(value), "\"");
  }
  return value;
}

absl::Status SetField(Message* message, const FieldDescriptor* field, const std::string& value,
                      const std::string& path) {
  // Parsing "field: value" into the parent reuses the textproto parser for
  // every type: numbers with range checks, enums by name, lists, messages.
  message->GetReflection()->ClearField(message, field);
  const std::string text = absl::StrCat(field->name(), ": ", ValueText(field, value));
  TextFormatErrors errors("--set " + path, text, message->GetDescriptor());
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.AllowPartialMessage(true);
  if (!parser.MergeFromString(text, message)) {
    // Inside a message the parser's own words (line, column, field) say more.
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !errors.Joined().empty()) {
      return absl::InvalidArgumentError(errors.Joined());
    }
    std::string expected = field->cpp_type() == FieldDescriptor::CPPTYPE_ENUM
                               ? absl::StrCat("one of ", EnumValueNames(*field->enum_type()))
                               : absl::StrCat("a value of type ", field->type_name());
    return absl::InvalidArgumentError(absl::StrCat("--set ", path, "=", value, ": \"", value,
                                                   "\" is not ", expected, " for ", path));
  }
  return absl::OkStatus();
}

absl::Status ApplyPath(Message* message, const std::vector<std::string>& parts, size_t at,
                       const std::string& full_path, const std::string& value,
                       const DefaultOptionsLookup& lookup, const std::string& plugin_kind,
                       const std::string& plugin_name);

// Descends into a google.protobuf.Any: unpack to the plugin's options type,
// apply the rest of the path, pack it again.
absl::Status ApplyInsideAny(google::protobuf::Any* any, const std::vector<std::string>& parts,
                            size_t at, const std::string& full_path, const std::string& value,
                            const DefaultOptionsLookup& lookup, const std::string& plugin_kind,
                            const std::string& plugin_name) {
  const std::string prefix = absl::StrJoin(parts.begin(), parts.begin() + at, ".");
  std::unique_ptr<Message> options;
  if (!any->type_url().empty()) {
    std::string type_name;
    google::protobuf::Any::ParseAnyTypeUrl(any->type_url(), &type_name);
    const Descriptor* descriptor =
        google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(type_name);
    if (descriptor == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("--set ", full_path, ": options type ", type_name, " is not linked in"));
    }
    options.reset(
        google::protobuf::MessageFactory::generated_factory()->GetPrototype(descriptor)->New());
    any->UnpackTo(options.get());
  } else {
    const Message* prototype = lookup ? lookup(plugin_kind, plugin_name) : nullptr;
    if (prototype == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--set ", full_path, ": ", prefix, " holds no options yet and ",
          plugin_name.empty() ? "no plugin is named" : "\"" + plugin_name + "\" is not a known " +
                                                           plugin_kind,
          "; set the plugin's name first"));
    }
    options.reset(prototype->New());
  }
  if (auto status = ApplyPath(options.get(), parts, at, full_path, value, lookup, "", "");
      !status.ok()) {
    return status;
  }
  any->PackFrom(*options);
  return absl::OkStatus();
}

absl::Status ApplyPath(Message* message, const std::vector<std::string>& parts, size_t at,
                       const std::string& full_path, const std::string& value,
                       const DefaultOptionsLookup& lookup, const std::string& plugin_kind,
                       const std::string& plugin_name) {
  const Descriptor* descriptor = message->GetDescriptor();
  const Reflection* reflection = message->GetReflection();
  const std::string& part = parts[at];
  const FieldDescriptor* field = descriptor->FindFieldByName(part);
  const std::string where = absl::StrJoin(parts.begin(), parts.begin() + at + 1, ".");
  if (field == nullptr && at == 2 && parts[0] == "model" && parts[1] == "options" &&
      IsMovedModelOption(part)) {
    return absl::InvalidArgumentError(absl::StrCat("--set ", full_path, "=", value, ": ",
                                                   MovedModelOptionError(part, value),
                                                   "; --set model.", part, "=", value));
  }
  if (field == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--set ", full_path, ": ", descriptor->full_name(), " has no field \"", part, "\"; ",
        "fields: ", absl::StrJoin(FieldNames(descriptor), ", "), ".",
        DidYouMean(part, FieldNames(descriptor))));
  }
  if (at + 1 == parts.size()) return SetField(message, field, value, full_path);
  if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
    return absl::InvalidArgumentError(
        absl::StrCat("--set ", full_path, ": ", where, " is a ", field->type_name(),
                     ", not a message; nothing is inside it"));
  }
  Message* child = nullptr;
  size_t next = at + 1;
  if (field->is_repeated()) {
    int index = 0;
    if (!absl::SimpleAtoi(parts[next], &index) || index < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--set ", full_path, ": ", where,
                                                     " is a list; give an index, e.g. ", where,
                                                     ".0.", parts[next]));
    }
    const int size = reflection->FieldSize(*message, field);
    if (index > size) {
      return absl::InvalidArgumentError(absl::StrCat("--set ", full_path, ": ", where, " has ",
                                                     size, " entries; index ", index,
                                                     " would leave a gap (use 0..", size, ")"));
    }
    child = index == size ? reflection->AddMessage(message, field)
                          : reflection->MutableRepeatedMessage(message, field, index);
    ++next;
    if (next == parts.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--set ", full_path, ": name a field of ", where, ".", index));
    }
  } else {
    child = reflection->MutableMessage(message, field);
  }
  std::string kind = PluginKindOfField(field->name());
  std::string name;
  if (!kind.empty()) {
    if (const FieldDescriptor* name_field = child->GetDescriptor()->FindFieldByName("name")) {
      name = child->GetReflection()->GetString(*child, name_field);
    }
  } else {
    kind = plugin_kind;
    name = plugin_name;
  }
  if (child->GetDescriptor()->full_name() == "google.protobuf.Any") {
    return ApplyInsideAny(static_cast<google::protobuf::Any*>(child), parts, next, full_path,
                          value, lookup, kind, name);
  }
  return ApplyPath(child, parts, next, full_path, value, lookup, kind, name);
}

}  // namespace

absl::Status ApplyOverride(const std::string& assignment, const DefaultOptionsLookup& lookup,
                           PipelineConfig* config) {
  const size_t equals = assignment.find('=');
  if (equals == std::string::npos || equals == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--set ", assignment, ": expected field.path=value, e.g. --set=trainer.epochs=3"));
  }
  const std::string path = assignment.substr(0, equals);
  const std::string value = assignment.substr(equals + 1);
  const std::vector<std::string> parts = absl::StrSplit(path, '.');
  for (const std::string& part : parts) {
    if (part.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--set ", assignment, ": empty field name"));
    }
  }
  return ApplyPath(config, parts, 0, path, value, lookup, "", "");
}

std::string PluginKindOfField(const std::string& field_name) {
  if (field_name == "model") return "model";
  if (field_name == "dataset") return "dataset";
  if (field_name == "transforms") return "transform";
  if (field_name == "sampler") return "sampler";
  if (field_name == "strategy") return "strategy";
  if (field_name == "optimizer") return "optimizer";
  if (field_name == "schedule") return "schedule";
  if (field_name == "loss") return "loss";
  if (field_name == "metrics") return "metric";
  return "";
}

}  // namespace pipeline
