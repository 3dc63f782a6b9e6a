#include "pipeline/image/idx_reader.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace pipeline {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;

uint32_t BigEndian32(const std::string& bytes, size_t offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data()) + offset;
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

absl::Status CheckHeader(const std::string& bytes, const std::string& path, uint32_t magic,
                         size_t header_size, const char* what) {
  if (bytes.size() < header_size) {
    return absl::DataLossError(absl::StrCat(path, ": not an idx ", what, " file: only ",
                                            bytes.size(), " bytes, the header alone is ",
                                            header_size));
  }
  const uint32_t found = BigEndian32(bytes, 0);
  if (found != magic) {
    return absl::DataLossError(absl::StrCat(path, ": not an idx ", what, " file: magic number 0x",
                                            absl::Hex(found, absl::kZeroPad8), ", expected 0x",
                                            absl::Hex(magic, absl::kZeroPad8)));
  }
  return absl::OkStatus();
}

}  // namespace

const std::vector<std::string>& FashionMnistClassNames() {
  static const auto* names = new std::vector<std::string>{
      "T-shirt_top", "Trouser", "Pullover", "Dress", "Coat",
      "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle_boot"};
  return *names;
}

absl::StatusOr<std::string> ReadMaybeGzippedFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  std::stringstream buffer;
  buffer << file.rdbuf();
  return GunzipIfCompressed(buffer.str(), path);
}

absl::StatusOr<std::string> GunzipIfCompressed(std::string raw, const std::string& path) {
  if (raw.size() < 2 || static_cast<unsigned char>(raw[0]) != 0x1f ||
      static_cast<unsigned char>(raw[1]) != 0x8b) {
    return raw;
  }
  z_stream stream{};
  // 16 + MAX_WBITS: expect a gzip wrapper.
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {
    return absl::InternalError(absl::StrCat(path, ": zlib initialisation failed"));
  }
  stream.next_in = reinterpret_cast<Bytef*>(raw.data());
  stream.avail_in = static_cast<uInt>(raw.size());
  std::string out;
  char chunk[1 << 16];
  int result = Z_OK;
  while (result == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(chunk);
    stream.avail_out = sizeof(chunk);
    result = inflate(&stream, Z_NO_FLUSH);
    out.append(chunk, sizeof(chunk) - stream.avail_out);
    if (result == Z_BUF_ERROR && stream.avail_in == 0) break;  // input ended early
  }
  inflateEnd(&stream);
  if (result != Z_STREAM_END) {
    return absl::DataLossError(
        absl::StrCat(path, ": corrupt or truncated gzip data (zlib: ",
                     stream.msg ? stream.msg : "unexpected end of input", ")"));
  }
  return out;
}

absl::StatusOr<IdxImages> ParseIdxImages(const std::string& bytes, const std::string& path) {
  if (auto status = CheckHeader(bytes, path, kImagesMagic, 16, "images"); !status.ok()) {
    return status;
  }
  IdxImages images;
  images.count = BigEndian32(bytes, 4);
  images.rows = static_cast<int>(BigEndian32(bytes, 8));
  images.cols = static_cast<int>(BigEndian32(bytes, 12));
  if (images.rows <= 0 || images.cols <= 0 || images.rows > 65536 || images.cols > 65536) {
    return absl::DataLossError(absl::StrCat(path, ": implausible image size ", images.rows, "x",
                                            images.cols));
  }
  const uint64_t expected =
      static_cast<uint64_t>(images.count) * images.rows * images.cols;
  if (bytes.size() - 16 != expected) {
    return absl::DataLossError(absl::StrCat(path, ": header promises ", images.count, " images of ",
                                            images.rows, "x", images.cols, " (", expected,
                                            " bytes) but the file holds ", bytes.size() - 16));
  }
  images.pixels.assign(bytes.begin() + 16, bytes.end());
  return images;
}

absl::StatusOr<std::vector<uint8_t>> ParseIdxLabels(const std::string& bytes,
                                                    const std::string& path) {
  if (auto status = CheckHeader(bytes, path, kLabelsMagic, 8, "labels"); !status.ok()) {
    return status;
  }
  const uint64_t count = BigEndian32(bytes, 4);
  if (bytes.size() - 8 != count) {
    return absl::DataLossError(absl::StrCat(path, ": header promises ", count,
                                            " labels but the file holds ", bytes.size() - 8));
  }
  return std::vector<uint8_t>(bytes.begin() + 8, bytes.end());
}

absl::StatusOr<IdxImages> ReadIdxImages(const std::string& path) {
  auto bytes = ReadMaybeGzippedFile(path);
  if (!bytes.ok()) return bytes.status();
  return ParseIdxImages(*bytes, path);
}

absl::StatusOr<std::vector<uint8_t>> ReadIdxLabels(const std::string& path) {
  auto bytes = ReadMaybeGzippedFile(path);
  if (!bytes.ok()) return bytes.status();
  return ParseIdxLabels(*bytes, path);
}

}  // namespace pipeline
