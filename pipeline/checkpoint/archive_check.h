#ifndef PIPELINE_CHECKPOINT_ARCHIVE_CHECK_H_
#define PIPELINE_CHECKPOINT_ARCHIVE_CHECK_H_

#include <string>

#include "absl/status/status.h"

namespace pipeline {

// A checkpoint is a TorchScript archive, and LibTorch's importer compiles
// the class definitions under code/ as TorchScript source: some damaged
// sources crash it (a segfault in ScriptTypeParser::parseClassConstant for
// a class constant with a misspelt name), which no try/catch can turn into
// an error. So before LibTorch sees a file, every source in it must be of
// the one form torch::serialize writes: attribute declarations, no code.
//
// OK when every source is such a declaration; otherwise InvalidArgument
// naming `path`, the record, the line and its text.
absl::Status CheckArchiveSources(const std::string& path);

}  // namespace pipeline

#endif  // PIPELINE_CHECKPOINT_ARCHIVE_CHECK_H_
