// The config reader on untrusted text: the textproto parser, --set
// overrides (each input line "#--set=path=value", a comment to the parser,
// is applied in order, also to a config that failed to parse) and the merge
// an import does. Whatever comes out must print as a config that parses
// back to the same text: the resolved config a run stores is read again on
// resume.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/stubs/logging.h"
#include "pipeline/config/config_loader.h"
#include "pipeline/registry/registry_test.pb.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// Two plugins with options, so that `x.options.field=...` reaches into an
// Any that has no options block yet.
const google::protobuf::Message* DefaultOptions(const std::string& kind,
                                                const std::string& plugin_name) {
  if (plugin_name == "greeter") return &pipeline::testing::GreeterOptions::default_instance();
  if (kind == "model" && plugin_name == "other") {
    return &pipeline::testing::OtherOptions::default_instance();
  }
  return nullptr;
}

}  // namespace

// Every invalid UTF-8 string would log a line; millions of them slow the
// fuzzer down and bury its report.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  pipeline::PipelineConfig config;
  if (!pipeline::ParseTextProto(text, "fuzz.textproto", &config).ok()) config.Clear();
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, "#--set=")) continue;
    // A failed override may leave the config half-changed; the run stops
    // on the error, but nothing may crash on the way.
    (void)pipeline::ApplyOverride(std::string(line), DefaultOptions, &config);
  }

  const std::string printed = pipeline::ConfigToText(config);
  pipeline::PipelineConfig again;
  const absl::Status reparsed = pipeline::ParseTextProto(printed, "printed.textproto", &again);
  FUZZ_CHECK(reparsed.ok(), std::string(reparsed.message()) + "\nin:\n" + printed);
  FUZZ_CHECK(pipeline::ConfigToText(again) == printed, "printed:\n" + printed);

  // An import: this config over a base, and over a copy of itself, which
  // must change nothing.
  pipeline::PipelineConfig base;
  base.mutable_trainer()->set_epochs(2);
  base.set_output_dir("runs/base");
  pipeline::MergeConfigOver(config, &base);
  pipeline::PipelineConfig copy = again;
  pipeline::MergeConfigOver(again, &copy);
  FUZZ_CHECK(pipeline::ConfigToText(copy) == printed, "merged over itself:\n" + printed);
  return 0;
}
