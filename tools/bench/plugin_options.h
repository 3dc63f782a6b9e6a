#ifndef TOOLS_BENCH_PLUGIN_OPTIONS_H_
#define TOOLS_BENCH_PLUGIN_OPTIONS_H_

// A plugin's options are an Any of the plugin's own message type. The bench
// reads and edits them through reflection, so it needs no plugin header.

#include <string>

#include "google/protobuf/any.pb.h"
#include "pipeline/config/pipeline.pb.h"

namespace pipeline {
namespace bench {

// Sets the string field `field` of `plugin`'s options to `value`; false when
// its options have no such field.
bool SetStringOption(PluginConfig& plugin, const std::string& field, const std::string& value);

// The options as one line of text ("lr: 0.002 weight_decay: 0.05"); "" for
// a type this binary does not know.
std::string OptionsText(const google::protobuf::Any& any);

}  // namespace bench
}  // namespace pipeline

#endif  // TOOLS_BENCH_PLUGIN_OPTIONS_H_
