#ifndef PIPELINE_REGISTRY_PLUGIN_ABI_H_
#define PIPELINE_REGISTRY_PLUGIN_ABI_H_

// The stamp a plugin library carries so that train can refuse one built
// against other interfaces. A plugin library's code runs on the binary's
// registry, protos and interfaces through their C++ layout, so the version
// is a hash of pipeline/interfaces/*.h, pipeline/registry/registry.h and
// pipeline/config/pipeline.proto, made at build time
// (//pipeline/registry:plugin_abi_version): any change to them is a new
// version, and nobody has to remember to bump it.
//
// pipeline_plugin_library (plugins/plugin.bzl) links the stamp in; a library
// built another way writes PIPELINE_PLUGIN_ABI_STAMP() once in one source.

#include <cstdio>
#include <string>

#include "pipeline/registry/plugin_abi_version.h"

namespace pipeline {

inline constexpr long long kPluginAbiVersion = PIPELINE_PLUGIN_ABI_VERSION;

// As train prints it: the 15 hex digits of the hash.
inline std::string PluginAbiVersionText(long long version) {
  char text[24];
  std::snprintf(text, sizeof(text), "%015llx", version);
  return text;
}

// The exported function train looks up after dlopen.
inline constexpr char kPluginAbiSymbol[] = "pipeline_plugin_abi_version";

}  // namespace pipeline

#define PIPELINE_PLUGIN_ABI_STAMP()                                                  \
  extern "C" __attribute__((visibility("default"))) long long pipeline_plugin_abi_version() { \
    return ::pipeline::kPluginAbiVersion;                                                  \
  }

#endif  // PIPELINE_REGISTRY_PLUGIN_ABI_H_
