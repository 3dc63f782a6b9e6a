// Safetensors files from untrusted bytes: ReadSafetensors (a length, a JSON
// header from our own strict parser, then raw tensor bytes), and
// ReadStateDict, which tells safetensors from torch.save by content, on the
// same file. Whatever the bytes, each returns a status; what it reads must
// be what a valid header describes.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "pipeline/testing/temp_path.h"
#include "pipeline/weights/safetensors.h"
#include "pipeline/weights/state_dict_reader.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// The readers take a path, as users give them; one file per process,
// rewritten for every input.
const std::string& InputPath() {
  static const std::string* path = [] {
    return new std::string(pipeline::testing::TempPath(
        "fuzz_safetensors_" + std::to_string(::getpid()) + ".safetensors"));
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

  auto contents = pipeline::ReadSafetensors(path);
  if (contents.ok()) {
    FUZZ_CHECK(!contents->tensors.empty(), "a safetensors file read with no tensors");
    uint64_t bytes = 0;
    for (const auto& [name, tensor] : contents->tensors) {
      FUZZ_CHECK(tensor.defined(), name);
      bytes += static_cast<uint64_t>(tensor.nbytes());
    }
    // The tensors fill the data exactly, so they are never larger than the file.
    FUZZ_CHECK(bytes <= size, "tensors larger than their file");
  } else {
    const std::string message(contents.status().message());
    FUZZ_CHECK(message.rfind(path + ": ", 0) == 0,
               "an error that does not name the file: " + message);
  }
  auto tensors = pipeline::ReadStateDict(path);
  if (tensors.ok()) {
    FUZZ_CHECK(!tensors->empty(), "a state dict read with no tensors");
    for (const auto& [name, tensor] : *tensors) FUZZ_CHECK(tensor.defined(), name);
  }
  return 0;
}
