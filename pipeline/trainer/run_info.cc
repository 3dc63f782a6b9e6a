#include "pipeline/trainer/run_info.h"

#include <png.h>
#include <stdio.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <string>

#include "ATen/Version.h"
#include "absl/base/config.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "google/protobuf/stubs/common.h"
#include "jconfig.h"
#include "torch/version.h"

namespace pipeline {
namespace {

// Output of a shell command, or "" when it fails.
std::string CommandOutput(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return "";
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
  if (::pclose(pipe) != 0) return "";
  return output;
}

std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

#define PIPELINE_STRINGIFY_INNER(x) #x
#define PIPELINE_STRINGIFY(x) PIPELINE_STRINGIFY_INNER(x)

#if defined(__clang__)
constexpr char kCompiler[] = "clang " __clang_version__;
#else
constexpr char kCompiler[] = "gcc " __VERSION__;
#endif

}  // namespace

std::string JsonQuote(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string GitRevision(const std::string& source_dir) {
  const std::string dir = ShellQuote(source_dir.empty() ? "." : source_dir);
  std::string revision(absl::StripAsciiWhitespace(
      CommandOutput(absl::StrCat("git -C ", dir, " rev-parse HEAD 2>/dev/null"))));
  if (revision.empty()) return "";
  // Tracked files only: outputs and data written into the checkout do not
  // make the source dirty.
  const std::string changes = CommandOutput(
      absl::StrCat("git -C ", dir, " status --porcelain --untracked-files=no 2>/dev/null"));
  if (!absl::StripAsciiWhitespace(changes).empty()) revision += "-dirty";
  return revision;
}

std::string RunInfoJson(const RunInfoInputs& inputs) {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  char started[64] = {};
  const std::time_t now = std::time(nullptr);
  std::tm utc;
  ::gmtime_r(&now, &utc);
  std::strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", &utc);
  std::vector<std::string> command;
  for (const std::string& argument : inputs.command_line) command.push_back(JsonQuote(argument));
  const std::string revision = GitRevision(inputs.source_dir);
  const int protobuf = GOOGLE_PROTOBUF_VERSION;
  const std::string libraries = absl::StrCat(
      "{\"libtorch\":", JsonQuote(TORCH_VERSION),
      ",\"protobuf\":", JsonQuote(absl::StrCat(protobuf / 1000000, ".", protobuf / 1000 % 1000, ".",
                                              protobuf % 1000)),
      ",\"abseil\":", JsonQuote(absl::StrCat(ABSL_LTS_RELEASE_VERSION)),
      ",\"libjpeg_turbo\":", JsonQuote(PIPELINE_STRINGIFY(LIBJPEG_TURBO_VERSION)),
      ",\"libpng\":", JsonQuote(png_get_libpng_ver(nullptr)),
      ",\"compiler\":", JsonQuote(kCompiler), "}");
  return absl::StrCat("{\"started\":", JsonQuote(started), ",\"host\":", JsonQuote(host),
                      ",\"command\":[", absl::StrJoin(command, ","), "]",
                      ",\"git_revision\":", revision.empty() ? "null" : JsonQuote(revision),
                      ",\"libraries\":", libraries,
                      ",\"torch_config\":", JsonQuote(at::show_config()), "}");
}

}  // namespace pipeline
