#include "plugins/datasets/webdataset/sample_label.h"

#include <algorithm>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "pipeline/util/json_parser.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace webdataset_internal {
namespace {

// A label text in messages: short, and without the bytes of a binary file.
std::string Shown(absl::string_view text) {
  constexpr size_t kShown = 40;
  std::string shown;
  for (char c : text.substr(0, kShown)) shown.push_back(absl::ascii_isprint(c) ? c : '?');
  return absl::StrCat("\"", shown, text.size() > kShown ? "...\"" : "\"");
}

absl::StatusOr<int32_t> ParseClassIndex(absl::string_view digits, absl::string_view shown) {
  if (!digits.empty() && digits[0] == '-' && digits.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat("label ", shown, " is negative"));
  }
  const bool all_digits =
      !digits.empty() && std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit);
  int64_t value = 0;
  if (!all_digits || digits.size() > 10 || !absl::SimpleAtoi(digits, &value) ||
      value > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("label ", shown, " is not a class index (a decimal number below 2^31)"));
  }
  return static_cast<int32_t>(value);
}

}  // namespace

absl::StatusOr<int32_t> ParseClsLabel(absl::string_view text) {
  return ParseClassIndex(absl::StripAsciiWhitespace(text), Shown(text));
}

absl::StatusOr<int32_t> ParseJsonLabel(absl::string_view text, const std::string& field,
                                       const std::vector<std::string>& class_names) {
  absl::StatusOr<JsonValue> document = ParseJson(text);
  if (!document.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not valid JSON: ", document.status().message()));
  }
  const JsonValue* value = &*document;
  for (absl::string_view key : absl::StrSplit(field, '.')) {
    if (value->kind != JsonValue::Kind::kObject) {
      return absl::InvalidArgumentError(absl::StrCat(
          "no field \"", field, "\": ", JsonKindName(value->kind), " holds no \"", key, "\""));
    }
    const auto it = std::find_if(value->members.begin(), value->members.end(),
                                 [&](const auto& member) { return member.first == key; });
    if (it == value->members.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "no field \"", field, "\" (set json_label_field to the field that holds the label)"));
    }
    value = &it->second;
  }
  if (value->kind == JsonValue::Kind::kNumber) {
    return ParseClassIndex(value->text, Shown(value->text));
  }
  if (value->kind == JsonValue::Kind::kString) {
    const auto it = std::find(class_names.begin(), class_names.end(), value->text);
    if (it != class_names.end()) return static_cast<int32_t>(it - class_names.begin());
    return absl::InvalidArgumentError(absl::StrCat(
        "label ", Shown(value->text), " is not one of the ", class_names.size(), " class names",
        class_names.empty() ? " (a name needs class_names or classes.txt)" : ""));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "field \"", field, "\" holds ", JsonKindName(value->kind), ", not a class index or name"));
}

}  // namespace webdataset_internal
}  // namespace pipeline
