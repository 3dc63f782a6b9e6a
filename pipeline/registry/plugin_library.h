#ifndef PIPELINE_REGISTRY_PLUGIN_LIBRARY_H_
#define PIPELINE_REGISTRY_PLUGIN_LIBRARY_H_

// Loading plugins built as shared libraries (pipeline_plugin_library in
// plugins/plugin.bzl) into a binary that was built without them. The library
// leaves the registry, the protos and LibTorch undefined and takes the
// binary's (which is linked with --export-dynamic), so its registrations land
// in the same registries the config is checked against.

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace pipeline {

// dlopens `path`, checks its ABI stamp (plugin_abi.h), then registers its
// plugins. Every error names the file: a library that does not load (with
// dlerror's text), one without the stamp or with another version, one that
// registers nothing, and a plugin name that is already taken. A library
// already loaded is not loaded again. On error the library stays mapped (its
// code may already be referenced) but none of its plugins is registered
// after the first failing one; callers stop.
absl::Status LoadPluginLibrary(const std::string& path);

// LoadPluginLibrary on each of `paths` in order; stops at the first error.
absl::Status LoadPluginLibraries(const std::vector<std::string>& paths);

}  // namespace pipeline

#endif  // PIPELINE_REGISTRY_PLUGIN_LIBRARY_H_
