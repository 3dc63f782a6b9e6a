#include "plugins/datasets/webdataset/brace_expand.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace webdataset_internal {
namespace {

using Names = std::vector<std::string>;

constexpr absl::string_view kLetters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

// -?[0-9]+, as braceexpand's range expressions want.
bool IsInteger(absl::string_view text) {
  if (!text.empty() && text[0] == '-') text.remove_prefix(1);
  if (text.empty()) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(c)) return false;
  }
  return true;
}

// braceexpand's `re.sub(r'\\(.)', r'\1', name)`.
std::string Unescape(absl::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '\\' && i + 1 < name.size()) ++i;
    out.push_back(name[i]);
  }
  return out;
}

class Expander {
 public:
  Expander(absl::string_view whole, size_t max_names) : whole_(whole), max_names_(max_names) {}

  // `pattern` lies in the whole pattern from byte `base`, for columns in
  // errors.
  absl::StatusOr<Names> Pattern(absl::string_view pattern, size_t base) {
    std::vector<Names> items;
    size_t start = 0, depth = 0, open_at = 0;
    for (size_t pos = 0; pos < pattern.size(); ++pos) {
      const char c = pattern[pos];
      if (c == '\\') {
        ++pos;
      } else if (c == '{') {
        if (depth == 0) {
          if (pos > start) items.push_back({std::string(pattern.substr(start, pos - start))});
          start = open_at = pos;
        }
        ++depth;
      } else if (c == '}') {
        if (depth == 0) {
          return Malformed(absl::StrCat("the '}' at column ", base + pos + 1, " closes no '{'"));
        }
        if (--depth > 0) continue;
        const absl::string_view inner = pattern.substr(start + 1, pos - start - 1);
        ASSIGN_OR_RETURN(std::optional<Names> expanded, Expression(inner, base + start + 1));
        if (expanded) {
          items.push_back(*std::move(expanded));
        } else {  // "{x}": the braces stay, what is inside them is expanded
          ASSIGN_OR_RETURN(Names inside, Pattern(inner, base + start + 1));
          items.push_back({"{"});
          items.push_back(std::move(inside));
          items.push_back({"}"});
        }
        start = pos + 1;
      }
    }
    if (depth > 0) {
      return Malformed(absl::StrCat("the '{' at column ", base + open_at + 1, " is never closed"));
    }
    if (start < pattern.size()) items.push_back({std::string(pattern.substr(start))});
    return Product(items);
  }

 private:
  absl::Status Malformed(const std::string& what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("brace pattern \"", whole_, "\" is malformed: ", what));
  }

  absl::Status TooMany() const {
    return absl::InvalidArgumentError(
        absl::StrCat("brace pattern \"", whole_, "\" stands for more than ", max_names_, " names"));
  }

  // A range, a comma list, or nullopt for neither.
  absl::StatusOr<std::optional<Names>> Expression(absl::string_view expression, size_t base) {
    const std::vector<absl::string_view> parts = absl::StrSplit(expression, "..");
    const bool step_ok = parts.size() == 2 || (parts.size() == 3 && IsInteger(parts[2]));
    if (step_ok && IsInteger(parts[0]) && IsInteger(parts[1])) {
      return IntegerRange(parts, base);
    }
    auto is_letter = [](absl::string_view s) { return s.size() == 1 && absl::ascii_isalpha(s[0]); };
    if (step_ok && is_letter(parts[0]) && is_letter(parts[1])) return LetterRange(parts);
    return Sequence(expression, base);
  }

  // braceexpand's step: its digits, sign ignored, 0 meaning 1.
  static absl::StatusOr<int64_t> Step(const std::vector<absl::string_view>& parts) {
    if (parts.size() < 3) return 1;
    absl::string_view digits = parts[2];
    if (digits[0] == '-') digits.remove_prefix(1);
    int64_t step = 0;
    if (!absl::SimpleAtoi(digits, &step)) return absl::OutOfRangeError("step");
    return step == 0 ? 1 : step;
  }

  absl::StatusOr<std::optional<Names>> IntegerRange(const std::vector<absl::string_view>& parts,
                                                    size_t base) {
    int64_t first = 0, last = 0;
    absl::StatusOr<int64_t> step = Step(parts);
    if (!absl::SimpleAtoi(parts[0], &first) || !absl::SimpleAtoi(parts[1], &last) || !step.ok() ||
        first < -(int64_t{1} << 62) || first > (int64_t{1} << 62) || last < -(int64_t{1} << 62) ||
        last > (int64_t{1} << 62)) {
      return Malformed(absl::StrCat("a number in the range at column ", base + 1, " is too large"));
    }
    // Zero-padded to the wider bound when either bound is written with a
    // leading zero ("0" itself is not).
    auto padded = [](absl::string_view s) {
      return s != "0" && s != "-0" && (absl::StartsWith(s, "0") || absl::StartsWith(s, "-0"));
    };
    const int width = padded(parts[0]) || padded(parts[1])
                          ? static_cast<int>(std::max(parts[0].size(), parts[1].size()))
                          : 0;
    const uint64_t count = static_cast<uint64_t>(std::abs(last - first)) / *step + 1;
    if (count > max_names_) return TooMany();
    Names names;
    names.reserve(count);
    const int64_t direction = first <= last ? *step : -*step;
    for (uint64_t i = 0; i < count; ++i) {
      names.push_back(absl::StrFormat("%0*d", width, first + static_cast<int64_t>(i) * direction));
    }
    return names;
  }

  absl::StatusOr<std::optional<Names>> LetterRange(const std::vector<absl::string_view>& parts) {
    ASSIGN_OR_RETURN(const int64_t step, Step(parts));
    const int64_t first = static_cast<int64_t>(kLetters.find(parts[0][0]));
    const int64_t last = static_cast<int64_t>(kLetters.find(parts[1][0]));
    Names names;
    if (first <= last) {
      for (int64_t i = first; i <= last; i += step) names.emplace_back(1, kLetters[i]);
    } else {
      for (int64_t i = first; i >= last; i -= step) names.emplace_back(1, kLetters[i]);
    }
    return names;
  }

  // "a,b,{c,d}": each part a pattern of its own, one after the other;
  // nullopt without a comma outside inner braces.
  absl::StatusOr<std::optional<Names>> Sequence(absl::string_view sequence, size_t base) {
    std::vector<std::pair<absl::string_view, size_t>> parts;
    size_t start = 0, depth = 0;
    for (size_t pos = 0; pos < sequence.size(); ++pos) {
      const char c = sequence[pos];
      if (c == '\\') {
        ++pos;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}') {
        --depth;
      } else if (c == ',' && depth == 0) {
        parts.emplace_back(sequence.substr(start, pos - start), base + start);
        start = pos + 1;
      }
    }
    if (parts.empty()) return std::nullopt;
    parts.emplace_back(sequence.substr(start), base + start);
    Names names;
    for (const auto& [part, part_base] : parts) {
      ASSIGN_OR_RETURN(Names expanded, Pattern(part, part_base));
      if (names.size() + expanded.size() > max_names_) return TooMany();
      for (std::string& name : expanded) names.push_back(std::move(name));
    }
    return names;
  }

  // Every choice of one name per item, the first item varying slowest.
  absl::StatusOr<Names> Product(const std::vector<Names>& items) {
    Names names = {""};
    for (const Names& item : items) {
      if (item.size() > 0 && names.size() > max_names_ / item.size()) return TooMany();
      Names next;
      next.reserve(names.size() * item.size());
      for (const std::string& head : names) {
        for (const std::string& tail : item) next.push_back(head + tail);
      }
      names = std::move(next);
    }
    return names;
  }

  const absl::string_view whole_;
  const size_t max_names_;
};

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandBraces(absl::string_view pattern, size_t max_names) {
  ASSIGN_OR_RETURN(Names names, Expander(pattern, max_names).Pattern(pattern, 0));
  for (std::string& name : names) name = Unescape(name);
  return names;
}

}  // namespace webdataset_internal
}  // namespace pipeline
