#ifndef PIPELINE_REGISTRY_PLUGIN_ABI_H_
#define PIPELINE_REGISTRY_PLUGIN_ABI_H_

// The stamp a plugin library carries so that train can refuse one built
// against other interfaces. A plugin library's code runs on the binary's
// registry, protos and interfaces through their C++ layout, so any change to
// pipeline/registry, pipeline/interfaces or pipeline/config/pipeline.proto
// that moves a member or a virtual function bumps kPluginAbiVersion.
//
// pipeline_plugin_library (plugins/plugin.bzl) links the stamp in; a library
// built another way writes PIPELINE_PLUGIN_ABI_STAMP() once in one source.

namespace pipeline {

// 2: Transform::AsChannelMap, Strategy::TakeCommunicationWaitSeconds, the
// trainer and data options of this release.
// 3: Dataset::GetRegion, Transform::AsRegionCrop.
// 4: Strategy::CopiesBatchesToCuda, data.pin_memory.
inline constexpr int kPluginAbiVersion = 4;

// The exported function train looks up after dlopen.
inline constexpr char kPluginAbiSymbol[] = "pipeline_plugin_abi_version";

}  // namespace pipeline

#define PIPELINE_PLUGIN_ABI_STAMP()                                                  \
  extern "C" __attribute__((visibility("default"))) int pipeline_plugin_abi_version() { \
    return ::pipeline::kPluginAbiVersion;                                            \
  }

#endif  // PIPELINE_REGISTRY_PLUGIN_ABI_H_
