#include "pipeline/util/torch_status.h"

namespace pipeline {

std::string FirstLineOf(const std::string& message) {
  const size_t end = message.find('\n');
  return end == std::string::npos ? message : message.substr(0, end);
}

}  // namespace pipeline
