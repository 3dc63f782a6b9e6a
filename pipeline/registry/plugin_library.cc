#include "pipeline/registry/plugin_library.h"

#include <dlfcn.h>

#include <filesystem>
#include <functional>
#include <set>

#include "absl/strings/str_cat.h"
#include "pipeline/registry/plugin_abi.h"
#include "pipeline/registry/registry.h"

namespace pipeline {
namespace {

std::string DlError() {
  const char* error = ::dlerror();
  return error != nullptr ? error : "unknown dlopen error";
}

// Libraries loaded by this process, by canonical path: the flag and the
// config may name the same one, and dlopen of a loaded library runs no
// initialiser, so it would look like a library that registers nothing.
std::set<std::string>& Loaded() {
  static auto* loaded = new std::set<std::string>();
  return *loaded;
}

}  // namespace

absl::Status LoadPluginLibrary(const std::string& path) {
  std::error_code error;
  const std::filesystem::path file(path);
  const std::string canonical = std::filesystem::weakly_canonical(file, error).string();
  if (Loaded().count(canonical)) return absl::OkStatus();
  const std::string prefix = absl::StrCat("plugin library ", path, ": ");
  if (!std::filesystem::exists(file, error)) {
    return absl::NotFoundError(absl::StrCat(prefix, "no such file"));
  }
  // dlopen treats a name without a slash as a library to search for on the
  // system path; the user means the file in this folder.
  const std::string open_path = file.has_parent_path() ? path : "./" + path;

  // The library's static initialisers run inside dlopen; their registrations
  // are held until the stamp says the library was built for this binary.
  BeginHoldingRegistrations();
  // RTLD_NOW: a symbol the binary does not provide is reported here, by
  // name, instead of crashing the first call. RTLD_LOCAL: one library's
  // symbols never interpose another's.
  void* handle = ::dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  const std::string load_error = handle == nullptr ? DlError() : "";
  std::vector<std::function<absl::Status()>> registrations = EndHoldingRegistrations();
  if (handle == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "cannot be loaded: ", load_error));
  }
  Loaded().insert(canonical);

  ::dlerror();
  auto* stamp = reinterpret_cast<long long (*)()>(::dlsym(handle, kPluginAbiSymbol));
  if (stamp == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, "is not a pipeline plugin library: it does not export ", kPluginAbiSymbol,
        "(); build it with pipeline_plugin_library (plugins/plugin.bzl), or write "
        "PIPELINE_PLUGIN_ABI_STAMP() (pipeline/registry/plugin_abi.h) in one of its sources"));
  }
  const long long version = stamp();
  if (version != kPluginAbiVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        prefix, "was built for plugin ABI version ", PluginAbiVersionText(version),
        ", but this binary has version ", PluginAbiVersionText(kPluginAbiVersion),
        "; rebuild the library against this source tree"));
  }
  if (registrations.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, "registers no plugin; a plugin library registers each plugin with "
                "PIPELINE_REGISTER_PLUGIN"));
  }
  for (auto& registration : registrations) {
    if (absl::Status status = registration(); !status.ok()) {
      return absl::Status(status.code(), absl::StrCat(prefix, status.message(),
                                                      "; the binary or a library loaded "
                                                      "before has a plugin of that name: "
                                                      "rename this one"));
    }
  }
  return absl::OkStatus();
}

absl::Status LoadPluginLibraries(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    if (absl::Status status = LoadPluginLibrary(path); !status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace pipeline
