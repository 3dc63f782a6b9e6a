#include "pipeline/trainer/json_object.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace pipeline {

std::string JsonString(const std::string& text) {
  std::string quoted = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': quoted += "\\\""; break;
      case '\\': quoted += "\\\\"; break;
      case '\n': quoted += "\\n"; break;
      case '\t': quoted += "\\t"; break;
      case '\r': quoted += "\\r"; break;
      default:
        if (c < 0x20) {
          quoted += absl::StrFormat("\\u%04x", c);
        } else {
          quoted += static_cast<char>(c);
        }
    }
  }
  return quoted + "\"";
}

JsonObject& JsonObject::Add(const std::string& key, const std::string& value) {
  fields_.emplace_back(key, JsonString(value));
  return *this;
}

JsonObject& JsonObject::Add(const std::string& key, double value) {
  fields_.emplace_back(key, std::isfinite(value) ? absl::StrFormat("%.9g", value) : "null");
  return *this;
}

JsonObject& JsonObject::Add(const std::string& key, int64_t value) {
  fields_.emplace_back(key, absl::StrCat(value));
  return *this;
}

JsonObject& JsonObject::Add(const std::string& key, bool value) {
  fields_.emplace_back(key, value ? "true" : "false");
  return *this;
}

std::string JsonObject::ToString() const {
  std::string text = "{";
  for (size_t i = 0; i < fields_.size(); ++i) {
    absl::StrAppend(&text, i > 0 ? "," : "", JsonString(fields_[i].first), ":",
                    fields_[i].second);
  }
  return text + "}";
}

}  // namespace pipeline
