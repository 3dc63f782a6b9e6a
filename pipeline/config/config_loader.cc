#include "pipeline/config/config_loader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/empty.pb.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "pipeline/registry/registry.h"
#include "pipeline/util/edit_distance.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;
using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

std::vector<std::string> FieldNames(const Descriptor* descriptor) {
  std::vector<std::string> names;
  for (int i = 0; i < descriptor->field_count(); ++i) names.push_back(descriptor->field(i)->name());
  return names;
}

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

class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  explicit CollectErrors(std::string name) : name_(std::move(name)) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    errors_.push_back(
        absl::StrCat(name_, ":", line + 1, ":", column + 1, ": ", message, WhereItBelongs(message)));
  }
  std::string Joined() const { return absl::StrJoin(errors_, "\n"); }

 private:
  std::string name_;
  std::vector<std::string> errors_;
};


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

// The fields every model takes, declared once in ModelConfig beside the
// model's name, that each model plugin's options used to repeat. Their
// options types keep the names `reserved`, and the textproto parser drops a
// reserved field without a word: a config still setting one inside
// model.options would lose it silently (a run from random weights instead
// of the file it names). FindMovedModelOptions refuses them instead.
constexpr const char* kMovedModelOptions[] = {"num_classes", "in_channels", "weights",
                                              "freeze_backbone"};

bool IsMovedModelOption(const std::string& field) {
  for (const char* moved : kMovedModelOptions) {
    if (field == moved) return true;
  }
  return false;
}

std::string MovedModelOptionError(const std::string& field, const std::string& value) {
  return absl::StrCat("model.options.", field, " has moved: write model { ", field, ": ", value,
                      " } (beside name, not inside options)");
}

// Tokenizer errors are the parser's to report.
class IgnoreErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

// Every moved field (kMovedModelOptions) set directly inside model.options
// in the textproto `text`, as "<name>:<line>:<col>: model.options.<field>
// has moved: ...". It reads the tokens, not the parsed message, because the
// parser drops the fields (see above), and because it must work whatever
// else is wrong with the file and in the lenient mode too. A field the
// options type itself declares (a plugin's own `num_classes`) is the
// plugin's and is left alone; options of a type not linked in (a plugin
// library not loaded yet) are checked once it is.
std::vector<std::string> FindMovedModelOptions(const std::string& text, const std::string& name) {
  using google::protobuf::io::Tokenizer;
  google::protobuf::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  IgnoreErrors ignore;
  Tokenizer tokenizer(&input, &ignore);
  tokenizer.set_comment_style(Tokenizer::SH_COMMENT_STYLE);
  std::vector<Tokenizer::Token> tokens;
  while (tokenizer.Next()) tokens.push_back(tokenizer.current());

  // What encloses the current token: a message, by the field (or "[type]"
  // expansion) that opened it, or a `field: [...]` list.
  struct Scope {
    bool list;
    std::string field;
  };
  std::vector<Scope> scopes;
  std::vector<std::string> errors;
  auto is = [&](size_t i, const char* symbol) { return i < tokens.size() && tokens[i].text == symbol; };
  auto opens_message = [&](size_t i) { return is(i, "{") || is(i, "<"); };
  // The options type, when `scopes` is exactly model > options > [type]:
  // "" for the bare `options { weights: ... }` (fields of the Any itself).
  auto model_options_type = [&](std::string* type) {
    if (scopes.size() < 2 || scopes.size() > 3) return false;
    for (const Scope& scope : scopes) {
      if (scope.list) return false;
    }
    if (scopes[0].field != "model" || scopes[1].field != "options") return false;
    type->clear();
    if (scopes.size() == 3) {
      const std::string& expansion = scopes[2].field;
      if (expansion.size() < 2 || expansion.front() != '[') return false;
      *type = expansion.substr(1, expansion.size() - 2);
      *type = type->substr(type->rfind('/') + 1);
    }
    return true;
  };

  size_t i = 0;
  while (i < tokens.size()) {
    if (!scopes.empty() && scopes.back().list) {
      if (is(i, "]")) {
        scopes.pop_back();
      } else if (opens_message(i)) {
        scopes.push_back({false, scopes.back().field});
      }
      ++i;
      continue;
    }
    if (is(i, "}") || is(i, ">")) {
      if (!scopes.empty()) scopes.pop_back();
      ++i;
      continue;
    }
    const Tokenizer::Token& start = tokens[i];
    std::string field;
    if (start.type == Tokenizer::TYPE_IDENTIFIER) {
      field = start.text;
      ++i;
    } else if (is(i, "[")) {
      field = "[";
      for (++i; i < tokens.size() && !is(i, "]"); ++i) field += tokens[i].text;
      field += "]";
      ++i;
    } else {
      ++i;  // a separator, or something the parser will report
      continue;
    }
    if (is(i, ":")) ++i;
    if (opens_message(i)) {
      scopes.push_back({false, field});
      ++i;
      continue;
    }
    if (is(i, "[")) {
      scopes.push_back({true, field});
      ++i;
      continue;
    }
    // A scalar value: a token, a negative number, or adjacent strings.
    std::string value;
    if (is(i, "-")) value = tokens[i++].text;
    if (i < tokens.size()) {
      const bool string = tokens[i].type == Tokenizer::TYPE_STRING;
      value += tokens[i++].text;
      while (string && i < tokens.size() && tokens[i].type == Tokenizer::TYPE_STRING) {
        absl::StrAppend(&value, " ", tokens[i++].text);
      }
    }
    std::string type;
    if (!IsMovedModelOption(field) || !model_options_type(&type)) continue;
    if (!type.empty()) {
      const Descriptor* descriptor =
          google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(type);
      if (descriptor == nullptr || descriptor->FindFieldByName(field) != nullptr) continue;
    }
    errors.push_back(absl::StrCat(name, ":", start.line + 1, ":", start.column + 1, ": ",
                                  MovedModelOptionError(field, value)));
  }
  return errors;
}

absl::Status ParseConfigText(const std::string& text, const std::string& name, bool lenient,
                             Message* message) {
  absl::Status parsed;
  if (!lenient) {
    parsed = ParseTextProto(text, name, message);
  } else {
    CollectErrors errors(name);
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
  CollectErrors errors("--set " + path);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.AllowPartialMessage(true);
  const std::string text = absl::StrCat(field->name(), ": ", ValueText(field, value));
  if (!parser.MergeFromString(text, message)) {
    // Inside a message the parser's own words (line, column, field) say more.
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !errors.Joined().empty()) {
      return absl::InvalidArgumentError(errors.Joined());
    }
    std::string expected = field->cpp_type() == FieldDescriptor::CPPTYPE_ENUM
                               ? absl::StrCat("one of ", [&] {
                                   std::vector<std::string> names;
                                   for (int i = 0; i < field->enum_type()->value_count(); ++i) {
                                     names.push_back(field->enum_type()->value(i)->name());
                                   }
                                   return absl::StrJoin(names, ", ");
                                 }())
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
  CollectErrors errors(name);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, message)) {
    return absl::InvalidArgumentError(errors.Joined());
  }
  return absl::OkStatus();
}

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
