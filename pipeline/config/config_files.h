#ifndef PIPELINE_CONFIG_CONFIG_FILES_H_
#define PIPELINE_CONFIG_CONFIG_FILES_H_

// Config files: finding the one the user means, reading it with the
// configs it imports, merging them.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "pipeline/config/pipeline.pb.h"

namespace pipeline {

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

// Merges `top` over `base`: set singular fields of `top` win, sub-messages
// merge recursively, and a repeated field set in `top` replaces `base`'s.
void MergeConfigOver(const google::protobuf::Message& top, google::protobuf::Message* base);

}  // namespace pipeline

#endif  // PIPELINE_CONFIG_CONFIG_FILES_H_
