#ifndef PIPELINE_CONFIG_CONFIG_LOADER_H_
#define PIPELINE_CONFIG_CONFIG_LOADER_H_

// Reading a run's config: textproto files (with imports), then --set
// overrides. Every error names the file, line and column or the field path,
// and what would fix it. Each step has its own header:
//   config_text.h       parsing and printing textproto
//   config_files.h      finding a config, its imports, merging
//   config_overrides.h  --set field.path=value

#include "pipeline/config/config_files.h"      // IWYU pragma: export
#include "pipeline/config/config_overrides.h"  // IWYU pragma: export
#include "pipeline/config/config_text.h"       // IWYU pragma: export

#endif  // PIPELINE_CONFIG_CONFIG_LOADER_H_
