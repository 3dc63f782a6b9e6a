// config_reference: writes docs/config_reference.md, every field of the run
// config and of every in-tree plugin's options, with the comments, types and
// defaults from their .proto files (via a descriptor set protoc writes with
// source info, so this tool links no plugin).
//
//   bazel run //tools:config_reference -- --output=docs/config_reference.md
//
// tools:config_reference_test fails when the committed file is out of date.

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gflags/gflags.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"

DEFINE_string(descriptor_set, "tools/config_reference_descriptors.pb",
              "FileDescriptorSet with source info (protoc --include_source_info)");
DEFINE_string(output, "", "Write the reference here (default: standard output)");

namespace pipeline {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::SourceLocation;

// A comment as one line, fit for a table cell.
std::string OneLine(const std::string& comment) {
  std::vector<std::string> words = absl::StrSplit(comment, absl::ByAnyChar(" \n\t"),
                                                  absl::SkipEmpty());
  return absl::StrReplaceAll(absl::StrJoin(words, " "), {{"|", "\\|"}});
}

// A leading comment as Markdown: its indented lines (config examples) become
// a code block.
std::string Paragraphs(const std::string& comment) {
  std::string text;
  bool in_code = false;
  for (absl::string_view line : absl::StrSplit(comment, '\n')) {
    if (absl::StartsWith(line, " ")) line.remove_prefix(1);
    const bool indented = absl::StartsWith(line, "  ");
    if (indented != in_code && !(in_code && line.empty())) {
      absl::StrAppend(&text, in_code ? "```\n" : "\n```\n");
      in_code = indented;
    }
    absl::StrAppend(&text, line, "\n");
  }
  text = std::string(absl::StripTrailingAsciiWhitespace(text));
  if (in_code) absl::StrAppend(&text, "\n```");
  return text;
}

template <typename D>
std::string LeadingComment(const D* descriptor) {
  SourceLocation location;
  if (!descriptor->GetSourceLocation(&location)) return "";
  return location.leading_comments;
}

std::string TypeName(const FieldDescriptor* field) {
  std::string type;
  if (field->message_type() != nullptr) {
    type = field->message_type()->name();
  } else if (field->enum_type() != nullptr) {
    type = field->enum_type()->name();
  } else {
    type = field->type_name();
  }
  return field->is_repeated() ? absl::StrCat("repeated ", type) : type;
}

std::string DefaultText(const FieldDescriptor* field) {
  if (field->is_repeated()) return "empty";
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(field->default_value_int32());
    case FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(field->default_value_int64());
    case FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(field->default_value_uint32());
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(field->default_value_uint64());
    case FieldDescriptor::CPPTYPE_FLOAT:
      return absl::StrCat(field->default_value_float());
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return absl::StrCat(field->default_value_double());
    case FieldDescriptor::CPPTYPE_BOOL:
      return field->default_value_bool() ? "true" : "false";
    case FieldDescriptor::CPPTYPE_ENUM:
      return field->default_value_enum()->name();
    case FieldDescriptor::CPPTYPE_STRING:
      return absl::StrCat("\"", field->default_value_string(), "\"");
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return "unset";
  }
  return "";
}

void DescribeEnum(const EnumDescriptor* type, std::string* out) {
  absl::StrAppend(out, "\nEnum `", type->name(), "`: ");
  std::vector<std::string> values;
  for (int i = 0; i < type->value_count(); ++i) {
    const std::string comment = OneLine(LeadingComment(type->value(i)));
    SourceLocation location;
    std::string trailing;
    if (type->value(i)->GetSourceLocation(&location)) trailing = OneLine(location.trailing_comments);
    const std::string note = !comment.empty() ? comment : trailing;
    values.push_back(absl::StrCat("`", type->value(i)->name(), "`",
                                  note.empty() ? "" : absl::StrCat(" (", note, ")")));
  }
  absl::StrAppend(out, absl::StrJoin(values, ", "), ".\n");
}

void DescribeMessage(const Descriptor* message, std::string* out) {
  absl::StrAppend(out, "\n### ", message->full_name(), "\n\n");
  const std::string comment = Paragraphs(LeadingComment(message));
  if (!comment.empty()) absl::StrAppend(out, comment, "\n\n");
  if (message->field_count() == 0) {
    absl::StrAppend(out, "No options.\n");
  } else {
    absl::StrAppend(out, "| field | type | default | meaning |\n| --- | --- | --- | --- |\n");
    for (int i = 0; i < message->field_count(); ++i) {
      const FieldDescriptor* field = message->field(i);
      absl::StrAppend(out, "| `", field->name(), "` | ", TypeName(field), " | `",
                      DefaultText(field), "` | ", OneLine(LeadingComment(field)), " |\n");
    }
  }
  for (int i = 0; i < message->enum_type_count(); ++i) DescribeEnum(message->enum_type(i), out);
  for (int i = 0; i < message->nested_type_count(); ++i) {
    DescribeMessage(message->nested_type(i), out);
  }
}

// "plugins/models/resnet/resnet.proto" -> "model `resnet`".
std::string PluginTitle(const std::string& path) {
  std::vector<std::string> parts = absl::StrSplit(path, '/');
  if (parts.size() < 4) return path;
  std::string kind = parts[1];
  if (absl::EndsWith(kind, "ies")) {
    kind = absl::StrCat(kind.substr(0, kind.size() - 3), "y");
  } else if (absl::EndsWith(kind, "sses")) {  // losses
    kind.resize(kind.size() - 2);
  } else if (absl::EndsWith(kind, "s")) {
    kind.pop_back();
  }
  return absl::StrCat(kind, " `", parts[2], "`");
}

absl::StatusOr<std::string> Reference(const std::string& descriptor_set_path) {
  std::ifstream file(descriptor_set_path, std::ios::binary);
  google::protobuf::FileDescriptorSet set;
  if (!file || !set.ParseFromIstream(&file)) {
    return absl::NotFoundError(
        absl::StrCat(descriptor_set_path, ": cannot read the descriptor set"));
  }
  google::protobuf::DescriptorPool pool;
  std::vector<const FileDescriptor*> files;
  for (const auto& proto : set.file()) {
    const FileDescriptor* built = pool.BuildFile(proto);
    if (built == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("cannot build ", proto.name()));
    }
    if (!absl::StartsWith(built->name(), "google/")) files.push_back(built);
  }
  // The run config first, then the plugins by kind and name.
  std::sort(files.begin(), files.end(), [](const FileDescriptor* a, const FileDescriptor* b) {
    const bool a_core = absl::StartsWith(a->name(), "pipeline/");
    const bool b_core = absl::StartsWith(b->name(), "pipeline/");
    if (a_core != b_core) return a_core;
    return a->name() < b->name();
  });
  std::string out =
      "# Config reference\n\n"
      "Every field of a run's config and of each in-tree plugin's options, from the\n"
      "comments in their `.proto` files. Generated by\n"
      "`bazel run //tools:config_reference -- --output=docs/config_reference.md`;\n"
      "`//tools:config_reference_test` checks that it is current.\n";
  for (const FileDescriptor* proto : files) {
    const bool core = absl::StartsWith(proto->name(), "pipeline/");
    absl::StrAppend(&out, "\n## ", core ? "The run config" : PluginTitle(proto->name()), " (`",
                    proto->name(), "`)\n");
    for (int i = 0; i < proto->message_type_count(); ++i) {
      DescribeMessage(proto->message_type(i), &out);
    }
    for (int i = 0; i < proto->enum_type_count(); ++i) DescribeEnum(proto->enum_type(i), &out);
  }
  return out;
}

int Main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  auto reference = Reference(FLAGS_descriptor_set);
  if (!reference.ok()) {
    std::cerr << "error: " << reference.status().message() << "\n";
    return 2;
  }
  if (FLAGS_output.empty()) {
    std::cout << *reference;
    return 0;
  }
  // `bazel run` starts in the runfiles; --output means the user's folder.
  const char* working_dir = std::getenv("BUILD_WORKING_DIRECTORY");
  std::string output = FLAGS_output;
  if (working_dir != nullptr && output[0] != '/') output = absl::StrCat(working_dir, "/", output);
  std::ofstream file(output, std::ios::binary | std::ios::trunc);
  file << *reference;
  if (!file.flush()) {
    std::cerr << "error: cannot write " << output << "\n";
    return 1;
  }
  std::cerr << "wrote " << output << "\n";
  return 0;
}

}  // namespace
}  // namespace pipeline

int main(int argc, char** argv) { return pipeline::Main(argc, argv); }
