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
#include "pipeline/registry/plugin_abi.h"
#include "pipeline/util/torch_version.h"

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

std::vector<std::pair<std::string, std::string>> LibraryVersions() {
  const int protobuf = GOOGLE_PROTOBUF_VERSION;
  return {
      {"libtorch", kLibTorchVersion},
      {"protobuf", absl::StrCat(protobuf / 1000000, ".", protobuf / 1000 % 1000, ".",
                                protobuf % 1000)},
      {"abseil", absl::StrCat(ABSL_LTS_RELEASE_VERSION)},
      {"libjpeg_turbo", PIPELINE_STRINGIFY(LIBJPEG_TURBO_VERSION)},
      {"libpng", png_get_libpng_ver(nullptr)},
      {"compiler", kCompiler},
  };
}

std::string VersionText() {
  std::vector<std::string> parts;
  for (const auto& [name, version] : LibraryVersions()) parts.push_back(name + " " + version);
  return absl::StrCat(kCudaBuild ? "CUDA build" : "CPU build", "; plugin ABI ",
                      PluginAbiVersionText(kPluginAbiVersion), "; ", absl::StrJoin(parts, ", "));
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
  std::vector<std::string> libraries;
  for (const auto& [name, version] : LibraryVersions()) {
    libraries.push_back(absl::StrCat(JsonQuote(name), ":", JsonQuote(version)));
  }
  std::vector<std::string> compute;
  for (const auto& [name, value] : inputs.compute) {
    compute.push_back(absl::StrCat(JsonQuote(name), ":", JsonQuote(value)));
  }
  return absl::StrCat("{\"started\":", JsonQuote(started), ",\"host\":", JsonQuote(host),
                      ",\"command\":[", absl::StrJoin(command, ","), "]",
                      ",\"git_revision\":", revision.empty() ? "null" : JsonQuote(revision),
                      ",\"libraries\":{", absl::StrJoin(libraries, ","), "}",
                      ",\"cuda_build\":", kCudaBuild ? "true" : "false",
                      compute.empty() ? "" : absl::StrCat(",\"compute\":{",
                                                          absl::StrJoin(compute, ","), "}"),
                      ",\"torch_config\":", JsonQuote(at::show_config()), "}");
}

}  // namespace pipeline
