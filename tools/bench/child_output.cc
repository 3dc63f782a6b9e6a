#include "tools/bench/child_output.h"

#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace pipeline {
namespace bench {

std::unique_ptr<Subprocess> StartProcess(const std::vector<std::string>& argv,
                                         const std::vector<std::string>& env,
                                         const std::string& log) {
  SubprocessOptions options;
  options.argv = argv;
  options.environment = env;
  options.output = SubprocessOptions::Output::kFile;
  options.output_file = log;
  auto child = Subprocess::Start(options);
  if (!child.ok()) {
    std::cerr << "bench: " << child.status().message() << "\n";
    return nullptr;
  }
  return std::move(*child);
}

ProcessResult WaitProcess(std::unique_ptr<Subprocess> child, const std::string& log) {
  ProcessResult result;
  if (child == nullptr) return result;
  struct rusage usage {};
  result.exit_code = child->Wait(&usage);
  result.peak_rss_mb = usage.ru_maxrss / 1024.0;
  std::ifstream file(log);
  std::stringstream text;
  text << file.rdbuf();
  result.output = text.str();
  return result;
}

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::vector<std::string>& env, const std::string& log) {
  return WaitProcess(StartProcess(argv, env, log), log);
}

std::optional<double> JsonNumber(const std::string& output, const std::string& marker,
                                 const std::string& key) {
  std::optional<double> found;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (line.find(marker) == absl::string_view::npos) continue;
    const size_t at = line.find("\"" + key + "\":");
    if (at == absl::string_view::npos) continue;
    absl::string_view rest = line.substr(at + key.size() + 3);
    const size_t end = rest.find_first_of(",}");
    double value;
    if (absl::SimpleAtod(rest.substr(0, end), &value)) found = value;
  }
  return found;
}

std::string Tail(const std::string& output) {
  return output.size() > 2000 ? output.substr(output.size() - 2000) : output;
}

std::vector<std::string> TcmallocPreload() {
  if (!std::filesystem::exists(kTcmallocLibrary)) return {};
  return {std::string("LD_PRELOAD=") + kTcmallocLibrary};
}

std::string LastLine(const std::string& output) {
  const absl::string_view text = absl::StripAsciiWhitespace(output);
  const size_t newline = text.rfind('\n');
  return std::string(absl::StripAsciiWhitespace(
      newline == absl::string_view::npos ? text : text.substr(newline + 1)));
}

}  // namespace bench
}  // namespace pipeline
