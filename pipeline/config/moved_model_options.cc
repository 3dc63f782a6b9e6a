#include "pipeline/config/moved_model_options.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace pipeline {
namespace {

using google::protobuf::Descriptor;

constexpr const char* kMovedModelOptions[] = {"num_classes", "in_channels", "weights",
                                              "freeze_backbone"};

// Tokenizer errors are the parser's to report.
class IgnoreErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

}  // namespace

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

}  // namespace pipeline
