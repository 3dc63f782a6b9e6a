#include "pipeline/checkpoint/archive_check.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "caffe2/serialize/inline_container.h"
#include "pipeline/util/torch_status.h"

namespace pipeline {
namespace {

// The TorchScript type of one attribute, as torch::serialize writes them:
// a few scalar types, a tensor, a nested archive, and their containers.
bool ConsumeType(absl::string_view& text, int depth = 0) {
  if (depth > 8) return false;
  for (absl::string_view scalar : {"Tensor", "int", "float", "bool", "str", "NoneType"}) {
    if (absl::ConsumePrefix(&text, scalar)) {
      // "int" must not match the start of "intx".
      return text.empty() || !(absl::ascii_isalnum(text[0]) || text[0] == '_');
    }
  }
  if (absl::ConsumePrefix(&text, "__torch__.")) {
    size_t length = 0;
    while (length < text.size() &&
           (absl::ascii_isalnum(text[length]) || text[length] == '_' || text[length] == '.')) {
      ++length;
    }
    const absl::string_view name = text.substr(0, length);
    text.remove_prefix(length);
    return name == "Module" || absl::EndsWith(name, ".Module");
  }
  for (absl::string_view generic : {"List[", "Optional[", "Tuple[", "Dict["}) {
    if (!absl::ConsumePrefix(&text, generic)) continue;
    do {
      if (!ConsumeType(text, depth + 1)) return false;
    } while (absl::ConsumePrefix(&text, ", "));
    return absl::ConsumePrefix(&text, "]");
  }
  return false;
}

bool ConsumeQuotedName(absl::string_view& text) {
  if (!absl::ConsumePrefix(&text, "\"")) return false;
  const size_t end = text.find_first_of("\"\\\n");
  if (end == absl::string_view::npos || text[end] != '"') return false;
  text.remove_prefix(end + 1);
  return true;
}

bool IsIdentifier(absl::string_view text) {
  if (text.empty() || absl::ascii_isdigit(text[0])) return false;
  for (char c : text) {
    if (!absl::ascii_isalnum(c) && c != '_') return false;
  }
  return true;
}

// One line of a class torch::serialize::OutputArchive writes:
//   class Module(Module):
//     __parameters__ = ["fc.weight", "fc.bias", ]     (or __buffers__)
//     __annotations__ = []
//     __annotations__["fc.weight"] = Tensor
//     epoch : int
bool IsArchiveClassLine(absl::string_view line) {
  if (line == "class Module(Module):" || line == "  __annotations__ = []" || line.empty()) {
    return true;
  }
  if (!absl::ConsumePrefix(&line, "  ")) return false;
  if (absl::ConsumePrefix(&line, "__parameters__ = [") ||
      absl::ConsumePrefix(&line, "__buffers__ = [")) {
    while (ConsumeQuotedName(line)) {
      if (!absl::ConsumePrefix(&line, ", ")) return false;
    }
    return line == "]";
  }
  if (absl::ConsumePrefix(&line, "__annotations__[")) {
    return ConsumeQuotedName(line) && absl::ConsumePrefix(&line, "] = ") && ConsumeType(line) &&
           line.empty();
  }
  const size_t colon = line.find(" : ");
  if (colon == absl::string_view::npos || !IsIdentifier(line.substr(0, colon))) return false;
  line.remove_prefix(colon + 3);
  return ConsumeType(line) && line.empty();
}

}  // namespace

absl::Status CheckArchiveSources(const std::string& path) {
  absl::Status checked = CallTorch("", [&]() -> absl::Status {
    caffe2::serialize::PyTorchStreamReader reader(path);
    for (const std::string& record : reader.getAllRecords()) {
      if (!absl::StartsWith(record, "code/") || !absl::EndsWith(record, ".py")) continue;
      auto [data, size] = reader.getRecord(record);
      const absl::string_view source(static_cast<const char*>(data.get()), size);
      int number = 0;
      for (absl::string_view line : absl::StrSplit(source, '\n')) {
        ++number;
        if (!IsArchiveClassLine(line)) {
          return absl::InvalidArgumentError(absl::StrCat(
              record, " line ", number, " is not an attribute declaration train writes: \"",
              absl::CEscape(line.substr(0, 80)), "\""));
        }
      }
    }
    return absl::OkStatus();
  });
  if (!checked.ok()) {
    std::string reason(checked.message());
    if (reason.rfind(": ", 0) == 0) reason = reason.substr(2);
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": is not a checkpoint written by train (truncated or another format?): ", reason));
  }
  return absl::OkStatus();
}

}  // namespace pipeline
