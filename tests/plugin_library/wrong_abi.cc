// A library stamped for another version of the plugin interfaces.
#include "pipeline/registry/plugin_abi.h"

extern "C" __attribute__((visibility("default"))) long long pipeline_plugin_abi_version() {
  return ::pipeline::kPluginAbiVersion ^ 1;
}
