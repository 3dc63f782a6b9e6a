#ifndef PIPELINE_TRAINER_JSON_OBJECT_H_
#define PIPELINE_TRAINER_JSON_OBJECT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pipeline {

// One JSON object, fields in the order added, written on one line: the
// events and metrics.jsonl lines. Numbers keep 9 significant digits (a
// float's precision); a non-finite number is written as null.
class JsonObject {
 public:
  JsonObject& Add(const std::string& key, const std::string& value);
  JsonObject& Add(const std::string& key, const char* value) {
    return Add(key, std::string(value));
  }
  JsonObject& Add(const std::string& key, double value);
  JsonObject& Add(const std::string& key, int64_t value);
  JsonObject& Add(const std::string& key, int value) { return Add(key, int64_t{value}); }
  JsonObject& Add(const std::string& key, bool value);

  std::string ToString() const;

 private:
  std::vector<std::pair<std::string, std::string>> fields_;  // key, JSON text
};

// `text` as a JSON string, quotes included.
std::string JsonString(const std::string& text);

}  // namespace pipeline

#endif  // PIPELINE_TRAINER_JSON_OBJECT_H_
