#ifndef PIPELINE_CONFIG_CONFIG_LOADER_H_
#define PIPELINE_CONFIG_CONFIG_LOADER_H_

// Reading a run's config: textproto files (with imports), then --set
// overrides. Every error names the file, line and column or the field path,
// and what would fix it.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "pipeline/config/pipeline.pb.h"

namespace pipeline {

// Parses textproto `text` into `message`; errors read "<name>:<line>:<col>: ...".
absl::Status ParseTextProto(const std::string& text, const std::string& name,
                            google::protobuf::Message* message);

// `message` as textproto, plugin options expanded
// (`[type.googleapis.com/pipeline.ResNetOptions] { depth: 18 }`), the way
// configs are written.
std::string ConfigToText(const google::protobuf::Message& message);

// Reads `path` and every config it imports (depth first, cycles are errors),
// merging them so that fields set in a file override those of its imports.
absl::StatusOr<PipelineConfig> LoadConfigFile(const std::string& path);

// The plugin_libraries of the config at `path` with its imports, read before
// those libraries are loaded: the options of plugins not registered yet are
// skipped instead of rejected. Syntax errors are reported as LoadConfigFile
// would.
absl::StatusOr<std::vector<std::string>> ReadPluginLibraries(const std::string& path);

// Finds the config the user means by `name`: an absolute path; a path
// relative to `working_dir`; relative to `workspace_dir`; or a bare file name
// in `workspace_dir`/configs/ (".textproto" may be left off). Empty dirs are
// skipped.
absl::StatusOr<std::string> ResolveConfigPath(const std::string& name,
                                              const std::string& working_dir,
                                              const std::string& workspace_dir);

// Applies one `field.path=value` override, e.g. `trainer.epochs=3`,
// `train_data.transforms.0.name=resize`, `model.options.depth=34` (inside a
// plugin's options) or `learning_rate.schedule={name: "cosine"}`. Values are
// written as in a textproto; strings may leave out their quotes.
//
// `default_options(kind, plugin_name)` gives the options message of a plugin
// so that `x.options.field=...` works when the config has no options block
// yet; it may return null.
using DefaultOptionsLookup = std::function<const google::protobuf::Message*(
    const std::string& kind, const std::string& plugin_name)>;
absl::Status ApplyOverride(const std::string& assignment, const DefaultOptionsLookup& lookup,
                           PipelineConfig* config);

// Merges `top` over `base`: set singular fields of `top` win, sub-messages
// merge recursively, and a repeated field set in `top` replaces `base`'s.
void MergeConfigOver(const google::protobuf::Message& top, google::protobuf::Message* base);

// The plugin kind a PluginConfig field holds, from its field name
// ("transforms" -> "transform", "schedule" -> "schedule"), or "".
std::string PluginKindOfField(const std::string& field_name);

}  // namespace pipeline

#endif  // PIPELINE_CONFIG_CONFIG_LOADER_H_
