#include "pipeline/testing/state_dict_fixture.h"

#include <algorithm>
#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace pipeline {
namespace testing {
namespace {

std::string EntryText(const StateDictEntry& entry) {
  return absl::StrCat(entry.first, " ", entry.second);
}

// Up to two entries either side of `index` in both lists, so a shifted or
// misnamed block is recognisable at a glance.
std::string Neighbourhood(const std::vector<StateDictEntry>& actual,
                          const std::vector<StateDictEntry>& expected, size_t index) {
  const size_t begin = index >= 2 ? index - 2 : 0;
  const size_t end = index + 3;
  std::string text;
  auto append = [&](const char* title, const std::vector<StateDictEntry>& entries) {
    absl::StrAppend(&text, "\n  ", title, ":");
    for (size_t i = begin; i < std::min(end, entries.size()); ++i) {
      absl::StrAppend(&text, "\n    ", i == index ? "> " : "  ", "[", i, "] ",
                      EntryText(entries[i]));
    }
  };
  append("model", actual);
  append("fixture", expected);
  return text;
}

}  // namespace

std::string ShapeText(const torch::Tensor& tensor) {
  return tensor.dim() == 0 ? "scalar" : absl::StrJoin(tensor.sizes(), "x");
}

std::vector<StateDictEntry> StateDictEntries(const torch::nn::Module& module) {
  std::vector<StateDictEntry> entries;
  auto add_own_entries = [&entries](const std::string& prefix, const torch::nn::Module& m) {
    const std::string dotted = prefix.empty() ? "" : prefix + ".";
    for (const auto& parameter : m.named_parameters(/*recurse=*/false)) {
      entries.emplace_back(dotted + parameter.key(), ShapeText(parameter.value()));
    }
    for (const auto& buffer : m.named_buffers(/*recurse=*/false)) {
      entries.emplace_back(dotted + buffer.key(), ShapeText(buffer.value()));
    }
  };
  add_own_entries("", module);
  // named_modules() is pre-order, depth-first, in registration order: the
  // order Python's state_dict() visits modules.
  for (const auto& child : module.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    add_own_entries(child.key(), *child.value());
  }
  return entries;
}

absl::StatusOr<std::vector<StateDictEntry>> ReadStateDictFixture(const std::string& path) {
  std::ifstream file(path);
  if (!file.good()) {
    return absl::NotFoundError(absl::StrCat("cannot read state_dict fixture ", path,
                                            " (is it in the test's data? write it with "
                                            "tools/fixtures/torchvision_state_dict_keys.py)"));
  }
  std::vector<StateDictEntry> entries;
  std::string line;
  for (int line_number = 1; std::getline(file, line); ++line_number) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string key, shape, extra;
    if (!(fields >> key >> shape) || (fields >> extra)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_number, ": \"", line, "\" is not `<key> <shape>`"));
    }
    entries.emplace_back(std::move(key), std::move(shape));
  }
  if (entries.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("state_dict fixture ", path, " is empty"));
  }
  return entries;
}

absl::StatusOr<int64_t> ReadStateDictParameterCount(const std::string& path) {
  std::ifstream file(path);
  if (!file.good()) {
    return absl::NotFoundError(absl::StrCat("cannot read state_dict fixture ", path));
  }
  constexpr absl::string_view kPrefix = "# parameters: ";
  for (std::string line; std::getline(file, line);) {
    if (!absl::StartsWith(line, kPrefix)) continue;
    int64_t count = 0;
    if (!absl::SimpleAtoi(absl::string_view(line).substr(kPrefix.size()), &count)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": \"", line, "\" is not `# parameters: <count>`"));
    }
    return count;
  }
  return absl::NotFoundError(absl::StrCat("state_dict fixture ", path,
                                          " states no `# parameters: <count>`; write it again "
                                          "with tools/fixtures/torchvision_state_dict_keys.py"));
}

::testing::AssertionResult StateDictEntriesMatch(const std::vector<StateDictEntry>& actual,
                                                 const std::vector<StateDictEntry>& expected) {
  const size_t common = std::min(actual.size(), expected.size());
  for (size_t i = 0; i < common; ++i) {
    if (actual[i] != expected[i]) {
      const char* what = actual[i].first == expected[i].first ? "shape" : "key";
      return ::testing::AssertionFailure()
             << "state_dict entry " << i << " differs in its " << what << ": model has \""
             << EntryText(actual[i]) << "\", fixture has \"" << EntryText(expected[i]) << "\""
             << Neighbourhood(actual, expected, i);
    }
  }
  if (actual.size() < expected.size()) {
    return ::testing::AssertionFailure()
           << "the model has " << actual.size() << " state_dict entries, the fixture "
           << expected.size() << "; the first missing is [" << common << "] \""
           << EntryText(expected[common]) << "\"";
  }
  if (actual.size() > expected.size()) {
    return ::testing::AssertionFailure()
           << "the model has " << actual.size() << " state_dict entries, the fixture "
           << expected.size() << "; the first extra is [" << common << "] \""
           << EntryText(actual[common]) << "\"";
  }
  return ::testing::AssertionSuccess() << actual.size() << " state_dict entries match";
}

::testing::AssertionResult StateDictMatchesFixture(const torch::nn::Module& module,
                                                   const std::string& fixture_path) {
  absl::StatusOr<std::vector<StateDictEntry>> expected = ReadStateDictFixture(fixture_path);
  if (!expected.ok()) return ::testing::AssertionFailure() << expected.status().message();
  ::testing::AssertionResult result = StateDictEntriesMatch(StateDictEntries(module), *expected);
  if (!result) result << "\n  (fixture " << fixture_path << ")";
  return result;
}

}  // namespace testing
}  // namespace pipeline
