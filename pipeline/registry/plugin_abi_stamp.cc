// Linked into every plugin library by pipeline_plugin_library; never into a
// binary, so a stamp found by dlsym is the library's own.
#include "pipeline/registry/plugin_abi.h"

PIPELINE_PLUGIN_ABI_STAMP()
