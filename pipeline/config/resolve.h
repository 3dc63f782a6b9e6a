#ifndef PIPELINE_CONFIG_RESOLVE_H_
#define PIPELINE_CONFIG_RESOLVE_H_

// Turning a config as written into the config that runs: every default made
// explicit (so the log shows exactly what ran), every plugin looked up by
// name, every plugin's options unpacked to its own type and validated — all
// of it before anything is built, and every error reported at once.

#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "pipeline/config/pipeline.pb.h"

namespace pipeline {

// The resolved config, or one error whose message lists every problem, one
// per line, each starting with the field path ("model.name: ...").
absl::StatusOr<PipelineConfig> ResolveConfig(const PipelineConfig& config);

// The options message (with defaults) of plugin `name` of `kind` ("model",
// "dataset", ...), or null if there is no such plugin. Used by --set.
const google::protobuf::Message* DefaultOptionsOf(const std::string& kind,
                                                  const std::string& name);

// Sets every unset singular scalar field of `message` (and of its set
// sub-messages) that declares a default to that value, so that printing
// shows it. Fields declared without one stay unset: their absence means
// something (see the size fields of resize and random_resized_crop).
void FillDefaults(google::protobuf::Message* message);

}  // namespace pipeline

#endif  // PIPELINE_CONFIG_RESOLVE_H_
