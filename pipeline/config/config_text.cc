#include "pipeline/config/config_text.h"

#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/empty.pb.h"
#include "google/protobuf/text_format.h"
#include "pipeline/config/moved_model_options.h"
#include "pipeline/registry/registry.h"

namespace pipeline {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// For the parser's `Message type "pipeline.SingleDeviceOptions" has no field
// named "shard_optimizer_state".`: the fields that message has, and which
// other plugins' options have that one.
std::string WhereItBelongs(const std::string& parser_message) {
  const std::string kType = "Message type \"", kField = "\" has no field named \"";
  if (!absl::StartsWith(parser_message, kType)) return "";
  const size_t type_end = parser_message.find(kField);
  const size_t field_end = parser_message.rfind('"');
  if (type_end == std::string::npos || field_end <= type_end + kField.size()) return "";
  const std::string type = parser_message.substr(kType.size(), type_end - kType.size());
  const std::string field =
      parser_message.substr(type_end + kField.size(), field_end - type_end - kField.size());
  const Descriptor* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(type);
  // The config's own messages; an Any's fields are no help.
  if (descriptor == nullptr || !absl::StartsWith(type, "pipeline.")) return "";
  std::string hint = absl::StrCat(" Its fields: ", absl::StrJoin(FieldNames(descriptor), ", "), ".");
  const std::vector<std::string> owners = PluginsWithOptionField(type, field);
  if (!owners.empty()) {
    absl::StrAppend(&hint, " ", field, " is an option of ", absl::StrJoin(owners, ", "), ".");
  }
  return hint;
}

// The enums of the fields named `field` in `type` and the config messages
// under it.
void EnumsNamed(const Descriptor& type, const std::string& field,
                std::set<const Descriptor*>& seen, std::set<const EnumDescriptor*>& enums) {
  if (!seen.insert(&type).second) return;
  for (int i = 0; i < type.field_count(); ++i) {
    const FieldDescriptor& f = *type.field(i);
    if (f.name() == field && f.enum_type() != nullptr) enums.insert(f.enum_type());
    const Descriptor* child = f.message_type();
    if (child != nullptr && absl::StartsWith(child->full_name(), "pipeline.")) {
      EnumsNamed(*child, field, seen, enums);
    }
  }
}

// For the parser's `Unknown enumeration value of "HUGE" for field
// "variant".`: the values that field takes. Its message is the options type
// of the last `[type.googleapis.com/<type>]` before the error when that type
// has the field (plugin options are flat), else the one message under the
// root that has an enum field of that name.
std::string ValidValues(const std::string& parser_message, absl::string_view text_before,
                        const Descriptor* root) {
  const std::string kValue = "Unknown enumeration value of \"", kField = "\" for field \"";
  if (!absl::StartsWith(parser_message, kValue)) return "";
  const size_t field_at = parser_message.find(kField);
  const size_t field_end = parser_message.rfind('"');
  if (field_at == std::string::npos || field_end <= field_at + kField.size()) return "";
  const std::string field =
      parser_message.substr(field_at + kField.size(), field_end - field_at - kField.size());
  const EnumDescriptor* values = nullptr;
  const std::string kUrl = "type.googleapis.com/";
  const size_t url = text_before.rfind(kUrl);
  const size_t url_end = text_before.find(']', url);
  if (url != absl::string_view::npos && url_end != absl::string_view::npos) {
    const std::string type(text_before.substr(url + kUrl.size(), url_end - url - kUrl.size()));
    const Descriptor* options =
        google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(type);
    const FieldDescriptor* f = options != nullptr ? options->FindFieldByName(field) : nullptr;
    if (f != nullptr) values = f->enum_type();
  }
  if (values == nullptr && root != nullptr) {
    std::set<const Descriptor*> seen;
    std::set<const EnumDescriptor*> enums;
    EnumsNamed(*root, field, seen, enums);
    if (enums.size() == 1) values = *enums.begin();
  }
  if (values == nullptr) return "";
  return absl::StrCat(" Valid values: ", EnumValueNames(*values), ".");
}

// The text before (line, column), both from 0.
absl::string_view TextBefore(absl::string_view text, int line, int column) {
  size_t at = 0;
  for (int l = 0; l < line && at != absl::string_view::npos; ++l) {
    at = text.find('\n', at);
    if (at != absl::string_view::npos) ++at;
  }
  if (at == absl::string_view::npos) return text;
  return text.substr(0, std::min(text.size(), at + static_cast<size_t>(std::max(0, column))));
}

// Reads plugin options of types no linked or loaded plugin declares as empty
// messages, their fields skipped, so that a config can be read for its
// plugin_libraries before those libraries (and their option types) are loaded.
class SkipUnknownOptionTypes : public google::protobuf::TextFormat::Finder {
 public:
  const Descriptor* FindAnyType(const Message& message, const std::string& prefix,
                                const std::string& name) const override {
    const Descriptor* known = Finder::FindAnyType(message, prefix, name);
    return known != nullptr ? known : google::protobuf::Empty::descriptor();
  }
};

}  // namespace

std::string EnumValueNames(const EnumDescriptor& values) {
  std::vector<std::string> names;
  for (int i = 0; i < values.value_count(); ++i) names.push_back(values.value(i)->name());
  return absl::StrJoin(names, ", ");
}

std::vector<std::string> FieldNames(const Descriptor* descriptor) {
  std::vector<std::string> names;
  for (int i = 0; i < descriptor->field_count(); ++i) names.push_back(descriptor->field(i)->name());
  return names;
}

void TextFormatErrors::AddError(int line, google::protobuf::io::ColumnNumber column,
                                const std::string& message) {
  errors_.push_back(absl::StrCat(name_, ":", line + 1, ":", column + 1, ": ", message,
                                 WhereItBelongs(message),
                                 ValidValues(message, TextBefore(text_, line, column), root_)));
}

std::string ConfigToText(const Message& message) {
  google::protobuf::TextFormat::Printer printer;
  printer.SetExpandAny(true);
  // Bytes inside an options Any that no field of its type claims (written
  // as a raw `value:`, or by a newer plugin) have no effect on a run, and
  // printed as `6: 63` they would make a config that does not parse: the
  // resolved config a checkpoint carries must read back.
  printer.SetHideUnknownFields(true);
  std::string text;
  printer.PrintToString(message, &text);
  return text;
}

absl::Status ParseTextProto(const std::string& text, const std::string& name,
                            Message* message) {
  TextFormatErrors errors(name, text, message->GetDescriptor());
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, message)) {
    return absl::InvalidArgumentError(errors.Joined());
  }
  return absl::OkStatus();
}

absl::Status ParseConfigText(const std::string& text, const std::string& name, bool lenient,
                             Message* message) {
  absl::Status parsed;
  if (!lenient) {
    parsed = ParseTextProto(text, name, message);
  } else {
    TextFormatErrors errors(name, text, message->GetDescriptor());
    SkipUnknownOptionTypes finder;
    google::protobuf::TextFormat::Parser parser;
    parser.RecordErrorsTo(&errors);
    parser.SetFinder(&finder);
    parser.AllowUnknownField(true);
    if (!parser.ParseFromString(text, message)) {
      parsed = absl::InvalidArgumentError(errors.Joined());
    }
  }
  std::vector<std::string> errors = FindMovedModelOptions(text, name);
  if (errors.empty()) return parsed;
  // The parser stops at its first error. Where that is a moved field (the
  // bare `options { weights: ... }`, which the Any itself does not have),
  // the moved-field error above already says it better.
  if (!parsed.ok()) {
    const std::string first(parsed.message());
    const bool same_field = std::any_of(errors.begin(), errors.end(), [&](const std::string& e) {
      // "<name>:<line>:" and the field, from "<name>:<line>:<col>: model.options.<field> has".
      const size_t col = e.rfind(':', e.find(": model.options.") - 1);
      const size_t field = e.find("model.options.") + 14;
      return absl::StartsWith(first, e.substr(0, col + 1)) &&
             absl::StrContains(first, absl::StrCat("has no field named \"",
                                                   e.substr(field, e.find(' ', field) - field),
                                                   "\"."));
    });
    if (!same_field) errors.push_back(first);
  }
  return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
}

}  // namespace pipeline
