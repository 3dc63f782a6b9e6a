// A webdataset shard's tar headers and its .idx file on untrusted bytes:
// the tar walk (ustar, GNU long names, pax records) over the bytes as a
// file, and the index parser over the same bytes. Whatever parses must
// describe data inside the file, in order.

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "pipeline/data/shard_index.h"
#include "pipeline/data/tar_reader.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// The bytes as a file the reader can pread: an anonymous in-memory file.
int AsFile(const uint8_t* data, size_t size) {
  const int fd = memfd_create("fuzz.tar", 0);
  if (fd < 0) return -1;
  size_t written = 0;
  while (written < size) {
    const ssize_t n = write(fd, data + written, size - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  return written == size ? fd : (close(fd), -1);
}

void WalkTar(const uint8_t* data, size_t size) {
  const int fd = AsFile(data, size);
  if (fd < 0) return;
  pipeline::TarReader reader(fd, "fuzz.tar", size);
  uint64_t previous_end = 0;
  // Every member takes at least one 512-byte block, so a walk that does not
  // end within size / 512 + 1 members is going round in circles.
  for (size_t members = 0; members <= size / pipeline::kTarBlockBytes + 1; ++members) {
    auto member = reader.Next();
    if (!member.ok() || !member->has_value()) break;
    const pipeline::TarMember& m = **member;
    FUZZ_CHECK(m.data_offset == m.header_offset + pipeline::kTarBlockBytes,
               absl::StrCat("member ", m.name, ": data at ", m.data_offset, ", header at ",
                            m.header_offset));
    FUZZ_CHECK(m.header_offset >= previous_end,
               absl::StrCat("member ", m.name, " starts at ", m.header_offset,
                            " inside the one before, which ends at ", previous_end));
    FUZZ_CHECK(m.data_offset + m.size <= size,
               absl::StrCat("member ", m.name, " runs to ", m.data_offset + m.size,
                            " in a file of ", size));
    previous_end = m.data_offset + pipeline::TarPaddedSize(m.size);
    FUZZ_CHECK(members < size / pipeline::kTarBlockBytes + 1, "the walk does not end");
  }
  close(fd);
}

void ParseIndex(const uint8_t* data, size_t size) {
  auto index = pipeline::ParseShardIndex(
      std::string(reinterpret_cast<const char*>(data), size), "fuzz.tar.idx");
  if (!index.ok()) return;
  for (const pipeline::IndexedSample& sample : index->samples) {
    FUZZ_CHECK(sample.label >= 0, absl::StrCat("label ", sample.label));
    if (sample.image_size == pipeline::kImageTooLarge) continue;
    FUZZ_CHECK(sample.image_offset + sample.image_size <= index->shard_bytes,
               absl::StrCat("an image at ", sample.image_offset, " of ", sample.image_size,
                            " bytes in a shard of ", index->shard_bytes));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  WalkTar(data, size);
  ParseIndex(data, size);
  return 0;
}
