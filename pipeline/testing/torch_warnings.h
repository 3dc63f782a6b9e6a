// Records the warnings LibTorch raises (TORCH_WARN) on this thread while it
// is alive, instead of printing them, on LibTorch 1.13 and 2.x alike (the
// handler's interface and namespace changed in 2.0).
#ifndef PIPELINE_TESTING_TORCH_WARNINGS_H_
#define PIPELINE_TESTING_TORCH_WARNINGS_H_

#include <string>
#include <vector>

#include "c10/util/Exception.h"
#include "pipeline/util/torch_version.h"

namespace pipeline::testing {

class TorchWarningRecorder : public c10::WarningHandler {
 public:
  TorchWarningRecorder() : guard_(this) {}

#if PIPELINE_TORCH_AT_LEAST(2, 0)
  void process(const c10::Warning& warning) override { messages_.push_back(warning.msg()); }
#else
  void process(const c10::SourceLocation&, const std::string& message, bool) override {
    messages_.push_back(message);
  }
#endif

  const std::vector<std::string>& messages() const { return messages_; }

 private:
  std::vector<std::string> messages_;
#if PIPELINE_TORCH_AT_LEAST(2, 0)
  c10::WarningUtils::WarningHandlerGuard guard_;
#else
  c10::Warning::WarningHandlerGuard guard_;
#endif
};

}  // namespace pipeline::testing

#endif  // PIPELINE_TESTING_TORCH_WARNINGS_H_
