#ifndef PIPELINE_CONFIG_CONFIG_TEXT_H_
#define PIPELINE_CONFIG_CONFIG_TEXT_H_

// Configs as textproto: parsing with errors that name file, line, column and
// where a misplaced field belongs, and printing them the way they are
// written.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/message.h"

namespace pipeline {

// Parses textproto `text` into `message`; errors read "<name>:<line>:<col>: ...".
absl::Status ParseTextProto(const std::string& text, const std::string& name,
                            google::protobuf::Message* message);

// As ParseTextProto, and also refuses fields that moved out of
// model.options (moved_model_options.h). `lenient` reads plugin options of
// types not linked in yet as empty, so a config can be read for its
// plugin_libraries before they are loaded.
absl::Status ParseConfigText(const std::string& text, const std::string& name, bool lenient,
                             google::protobuf::Message* message);

// `message` as textproto, plugin options expanded
// (`[type.googleapis.com/pipeline.ResNetOptions] { depth: 18 }`), the way
// configs are written.
std::string ConfigToText(const google::protobuf::Message& message);

// The names of an enum's values, comma-separated, for an error message.
std::string EnumValueNames(const google::protobuf::EnumDescriptor& values);

// The names of a message type's fields, in declaration order.
std::vector<std::string> FieldNames(const google::protobuf::Descriptor* descriptor);

// The text-format parser's errors as "<name>:<line>:<col>: <message>", with
// the fields of the message an unknown field was written in and the
// plugins whose options have that field.
class TextFormatErrors : public google::protobuf::io::ErrorCollector {
 public:
  // `text` and `root` (the parsed message's type), where given, let an
  // unknown enum value's error list the valid ones.
  explicit TextFormatErrors(std::string name, absl::string_view text = {},
                            const google::protobuf::Descriptor* root = nullptr)
      : name_(std::move(name)), text_(text), root_(root) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override;
  std::string Joined() const { return absl::StrJoin(errors_, "\n"); }

 private:
  std::string name_;
  absl::string_view text_;
  const google::protobuf::Descriptor* root_;
  std::vector<std::string> errors_;
};

}  // namespace pipeline

#endif  // PIPELINE_CONFIG_CONFIG_TEXT_H_
