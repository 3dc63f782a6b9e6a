#ifndef PIPELINE_UTIL_JSON_PARSER_H_
#define PIPELINE_UTIL_JSON_PARSER_H_

// A strict JSON (RFC 8259) reader for headers of files that come from
// outside, such as safetensors weights. Protobuf's JSON reader, which the
// project has, fits messages of a known schema; through google.protobuf.Struct
// it would turn every number into a double (offsets above 2^53 would be
// silently rounded) and keep only one of two members with the same name, and
// a file format must see both exactly. So this keeps numbers as their text
// and objects as their members in file order, duplicates included.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pipeline {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  // A string's value (UTF-8, escapes resolved), or a number as written.
  std::string text;
  std::vector<JsonValue> items;                            // kArray
  std::vector<std::pair<std::string, JsonValue>> members;  // kObject, in order
};

// "null", "a number", "an object", ... for messages.
const char* JsonKindName(JsonValue::Kind kind);

// What a document may hold, so that hostile text can neither exhaust the
// stack nor make its few bytes per value into a JsonValue each (about 100
// bytes) without end.
struct JsonLimits {
  int max_depth = 64;  // arrays and objects within each other
  int64_t max_values = 4'000'000;
};

// The one JSON value in `text` (whitespace may surround it), or an error
// saying what is wrong at which byte offset: invalid UTF-8, a bad escape or
// number, unbalanced brackets, anything after the value, nesting deeper or
// more values than `limits` allow.
absl::StatusOr<JsonValue> ParseJson(absl::string_view text, const JsonLimits& limits = {});

// A number written as a non-negative integer (no sign, fraction or exponent)
// that fits 64 bits; nullopt for anything else.
std::optional<uint64_t> JsonUint64(const JsonValue& value);

// `text` as a JSON string, quotes included, escaped as serde_json (the
// safetensors reference writer) escapes: `"` and `\`, the control characters
// as \b \t \n \f \r or \u00xx; everything else, non-ASCII too, as is.
std::string JsonQuote(absl::string_view text);

}  // namespace pipeline

#endif  // PIPELINE_UTIL_JSON_PARSER_H_
