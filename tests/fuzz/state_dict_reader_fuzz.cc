// Weights files from untrusted bytes: ReadStateDict (our own unpickler over
// LibTorch's zip reader, or the checkpoint path for the trainer's archives)
// and ReadCheckpoint (LibTorch's TorchScript archive reader) on the same
// file. LibTorch reports damage with c10::Error; our code must turn it into
// a Status, so an exception escaping is a failure here like a crash is.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "pipeline/checkpoint/checkpoint.h"
#include "pipeline/testing/temp_path.h"
#include "pipeline/weights/state_dict_reader.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// Both readers take a path, as users give them; one file per process,
// rewritten for every input.
const std::string& InputPath() {
  static const std::string* path = [] {
    return new std::string(
        pipeline::testing::TempPath("fuzz_weights_" + std::to_string(::getpid()) + ".pt"));
  }();
  return *path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = InputPath();
  FILE* file = std::fopen(path.c_str(), "wb");
  FUZZ_CHECK(file != nullptr, "cannot write " + path);
  FUZZ_CHECK(std::fwrite(data, 1, size, file) == size, "cannot write " + path);
  std::fclose(file);

  auto tensors = pipeline::ReadStateDict(path);
  if (tensors.ok()) {
    FUZZ_CHECK(!tensors->empty(), "a state dict read with no tensors");
    for (const auto& [name, tensor] : *tensors) FUZZ_CHECK(tensor.defined(), name);
  }
  auto checkpoint = pipeline::ReadCheckpoint(path);
  if (checkpoint.ok()) {
    for (const auto& [name, tensor] : checkpoint->model) FUZZ_CHECK(tensor.defined(), name);
  }
  return 0;
}
