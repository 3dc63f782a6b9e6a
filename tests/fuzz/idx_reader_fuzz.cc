// The idx reader on untrusted bytes: the gzip layer, then both parsers (a
// file of one kind is garbage to the other). Whatever parses must hold
// exactly the bytes its header promises.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "pipeline/image/idx_reader.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto bytes = pipeline::GunzipIfCompressed(std::string(reinterpret_cast<const char*>(data), size),
                                            "fuzz.idx");
  if (!bytes.ok()) return 0;
  auto images = pipeline::ParseIdxImages(*bytes, "fuzz.idx");
  if (images.ok()) {
    FUZZ_CHECK(images->rows > 0 && images->cols > 0, "an image side is not positive");
    FUZZ_CHECK(static_cast<uint64_t>(images->count) * images->rows * images->cols ==
                   images->pixels.size(),
               absl::StrCat(images->count, " images of ", images->rows, "x", images->cols,
                            " but ", images->pixels.size(), " pixels"));
  }
  auto labels = pipeline::ParseIdxLabels(*bytes, "fuzz.idx");
  if (labels.ok()) {
    FUZZ_CHECK(labels->size() + 8 == bytes->size(), "labels and file size disagree");
  }
  return 0;
}
