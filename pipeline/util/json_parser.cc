#include "pipeline/util/json_parser.h"

#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

void AppendUtf8(uint32_t code_point, std::string* out) {
  if (code_point < 0x80) {
    out->push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

class Parser {
 public:
  Parser(absl::string_view text, const JsonLimits& limits) : text_(text), limits_(limits) {}

  absl::StatusOr<JsonValue> Document() {
    JsonValue value;
    SkipSpace();
    RETURN_IF_ERROR(Value(0, &value));
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the JSON value");
    return value;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON at byte ", pos_, ": ", what));
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }

  void SkipSpace() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t' || Peek() == '\n' || Peek() == '\r')) {
      ++pos_;
    }
  }

  bool Consume(absl::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  absl::Status Value(int depth, JsonValue* out) {
    if ((Peek() == '{' || Peek() == '[') && depth >= limits_.max_depth) {
      return Error(absl::StrCat("arrays and objects nested more than ", limits_.max_depth,
                                " levels deep"));
    }
    if (++values_ > limits_.max_values) {
      return Error(absl::StrCat("more than ", limits_.max_values, " values"));
    }
    if (AtEnd()) return Error("the text ends where a value should start");
    switch (Peek()) {
      case '{':
        return Object(depth, out);
      case '[':
        return Array(depth, out);
      case '"':
        out->kind = JsonValue::Kind::kString;
        return String(&out->text);
      case 't':
      case 'f':
        out->kind = JsonValue::Kind::kBool;
        out->boolean = Peek() == 't';
        if (Consume(out->boolean ? "true" : "false")) return absl::OkStatus();
        return Error("expected true or false");
      case 'n':
        out->kind = JsonValue::Kind::kNull;
        if (Consume("null")) return absl::OkStatus();
        return Error("expected null");
      default:
        out->kind = JsonValue::Kind::kNumber;
        return Number(&out->text);
    }
  }

  absl::Status Object(int depth, JsonValue* out) {
    out->kind = JsonValue::Kind::kObject;
    ++pos_;  // '{'
    SkipSpace();
    if (Consume("}")) return absl::OkStatus();
    while (true) {
      SkipSpace();
      if (Peek() != '"') return Error("expected a member name in double quotes");
      std::pair<std::string, JsonValue> member;
      RETURN_IF_ERROR(String(&member.first));
      SkipSpace();
      if (!Consume(":")) return Error("expected ':' after a member name");
      SkipSpace();
      RETURN_IF_ERROR(Value(depth + 1, &member.second));
      out->members.push_back(std::move(member));
      SkipSpace();
      if (Consume("}")) return absl::OkStatus();
      if (!Consume(",")) return Error("expected ',' or '}' in an object");
    }
  }

  absl::Status Array(int depth, JsonValue* out) {
    out->kind = JsonValue::Kind::kArray;
    ++pos_;  // '['
    SkipSpace();
    if (Consume("]")) return absl::OkStatus();
    while (true) {
      SkipSpace();
      out->items.emplace_back();
      RETURN_IF_ERROR(Value(depth + 1, &out->items.back()));
      SkipSpace();
      if (Consume("]")) return absl::OkStatus();
      if (!Consume(",")) return Error("expected ',' or ']' in an array");
    }
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  absl::Status Number(std::string* out) {
    const size_t start = pos_;
    Consume("-");
    if (Consume("0")) {
      if (IsDigit(Peek())) return Error("a number with a leading zero");
    } else if (IsDigit(Peek())) {
      while (IsDigit(Peek())) ++pos_;
    } else {
      return Error("expected a value");
    }
    if (Consume(".")) {
      if (!IsDigit(Peek())) return Error("expected a digit after '.'");
      while (IsDigit(Peek())) ++pos_;
    }
    if (Peek() == 'e' || Peek() == 'E') {
      ++pos_;
      if (Peek() == '+' || Peek() == '-') ++pos_;
      if (!IsDigit(Peek())) return Error("expected a digit in the exponent");
      while (IsDigit(Peek())) ++pos_;
    }
    *out = std::string(text_.substr(start, pos_ - start));
    return absl::OkStatus();
  }

  absl::StatusOr<uint32_t> Hex4() {
    if (pos_ + 4 > text_.size()) return Error("a \\u escape needs four hex digits");
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      value <<= 4;
      if (IsDigit(c)) {
        value |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        value |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        value |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        --pos_;
        return Error("a \\u escape needs four hex digits");
      }
    }
    return value;
  }

  absl::Status Escape(std::string* out) {
    static constexpr char kEscaped[] = "\"\\/bfnrt";
    static constexpr char kMeant[] = "\"\\/\b\f\n\r\t";
    const char c = Peek();
    const char* hit = c == '\0' ? nullptr : std::strchr(kEscaped, c);
    if (hit != nullptr) {
      out->push_back(kMeant[hit - kEscaped]);
      ++pos_;
      return absl::OkStatus();
    }
    if (c != 'u') return Error("an unknown escape in a string");
    ++pos_;
    ASSIGN_OR_RETURN(uint32_t code_point, Hex4());
    if (code_point >= 0xDC00 && code_point <= 0xDFFF) {
      return Error("a \\u escape of a lone low surrogate");
    }
    if (code_point >= 0xD800 && code_point <= 0xDBFF) {
      if (!Consume("\\u")) return Error("a high surrogate without its low half");
      ASSIGN_OR_RETURN(uint32_t low, Hex4());
      if (low < 0xDC00 || low > 0xDFFF) return Error("a high surrogate without its low half");
      code_point = 0x10000 + ((code_point - 0xD800) << 10) + (low - 0xDC00);
    }
    AppendUtf8(code_point, out);
    return absl::OkStatus();
  }

  // One UTF-8 sequence, checked (no overlong forms, surrogates or values
  // past U+10FFFF), copied to `out`.
  absl::Status Utf8(std::string* out) {
    const auto byte = [&](size_t at) { return static_cast<unsigned char>(text_[at]); };
    const unsigned char lead = byte(pos_);
    int length = 0;
    uint32_t code_point = 0, minimum = 0;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2, code_point = lead & 0x1F, minimum = 0x80;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3, code_point = lead & 0x0F, minimum = 0x800;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4, code_point = lead & 0x07, minimum = 0x10000;
    } else {
      return Error("invalid UTF-8");
    }
    if (pos_ + length > text_.size()) return Error("invalid UTF-8 (a sequence cut short)");
    for (int i = 1; i < length; ++i) {
      if ((byte(pos_ + i) & 0xC0) != 0x80) return Error("invalid UTF-8");
      code_point = (code_point << 6) | (byte(pos_ + i) & 0x3F);
    }
    if (code_point < minimum || code_point > 0x10FFFF ||
        (code_point >= 0xD800 && code_point <= 0xDFFF)) {
      return Error("invalid UTF-8");
    }
    out->append(text_.substr(pos_, length).data(), length);
    pos_ += length;
    return absl::OkStatus();
  }

  absl::Status String(std::string* out) {
    ++pos_;  // '"'
    while (true) {
      if (AtEnd()) return Error("a string without its closing quote");
      const unsigned char c = static_cast<unsigned char>(Peek());
      if (c == '"') {
        ++pos_;
        return absl::OkStatus();
      }
      if (c < 0x20) return Error("a control character inside a string");
      if (c == '\\') {
        ++pos_;
        if (AtEnd()) return Error("a string without its closing quote");
        RETURN_IF_ERROR(Escape(out));
      } else if (c >= 0x80) {
        RETURN_IF_ERROR(Utf8(out));
      } else {
        out->push_back(static_cast<char>(c));
        ++pos_;
      }
    }
  }

  absl::string_view text_;
  const JsonLimits limits_;
  size_t pos_ = 0;
  int64_t values_ = 0;
};

}  // namespace

const char* JsonKindName(JsonValue::Kind kind) {
  switch (kind) {
    case JsonValue::Kind::kNull:
      return "null";
    case JsonValue::Kind::kBool:
      return "a boolean";
    case JsonValue::Kind::kNumber:
      return "a number";
    case JsonValue::Kind::kString:
      return "a string";
    case JsonValue::Kind::kArray:
      return "an array";
    case JsonValue::Kind::kObject:
      return "an object";
  }
  return "?";
}

absl::StatusOr<JsonValue> ParseJson(absl::string_view text, const JsonLimits& limits) {
  return Parser(text, limits).Document();
}

std::optional<uint64_t> JsonUint64(const JsonValue& value) {
  if (value.kind != JsonValue::Kind::kNumber || value.text.empty()) return std::nullopt;
  uint64_t result = 0;
  for (const char c : value.text) {
    if (!IsDigit(c)) return std::nullopt;  // a sign, a fraction or an exponent
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (result > (std::numeric_limits<uint64_t>::max() - digit) / 10) return std::nullopt;
    result = result * 10 + digit;
  }
  return result;
}

std::string JsonQuote(absl::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", static_cast<unsigned char>(c));
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace pipeline
