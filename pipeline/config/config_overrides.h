#ifndef PIPELINE_CONFIG_CONFIG_OVERRIDES_H_
#define PIPELINE_CONFIG_CONFIG_OVERRIDES_H_

// `--set field.path=value` overrides of a loaded config.

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "google/protobuf/message.h"
#include "pipeline/config/pipeline.pb.h"

namespace pipeline {

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

// The plugin kind a PluginConfig field holds, from its field name
// ("transforms" -> "transform", "schedule" -> "schedule"), or "".
std::string PluginKindOfField(const std::string& field_name);

}  // namespace pipeline

#endif  // PIPELINE_CONFIG_CONFIG_OVERRIDES_H_
