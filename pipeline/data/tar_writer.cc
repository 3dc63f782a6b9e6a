#include "pipeline/data/tar_writer.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pipeline/data/tar_reader.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace {

constexpr uint64_t kMaxOctalSize = uint64_t{1} << 33;  // 11 octal digits
// POSIX ustar's magic "ustar\0" and version "00" (GNU tar writes "ustar  \0").
constexpr char kUstarMagicAndVersion[8] = {'u', 's', 't', 'a', 'r', '\0', '0', '0'};

// `value` as `width - 1` octal digits and a NUL, as tarfile writes numbers;
// every caller's value fits.
void PutOctal(char* field, size_t width, uint64_t value) {
  field[width - 1] = '\0';
  for (size_t i = width - 1; i-- > 0; value >>= 3) field[i] = static_cast<char>('0' + (value & 7));
}

// An empty string_view may hold a null pointer, which memcpy must not get.
void PutText(char* field, absl::string_view text) {
  if (!text.empty()) std::memcpy(field, text.data(), text.size());
}

}  // namespace

absl::StatusOr<std::string> UstarHeader(absl::string_view name, uint64_t size) {
  if (name.empty()) return absl::InvalidArgumentError("a tar member needs a name");
  if (size >= kMaxOctalSize) {
    return absl::InvalidArgumentError(absl::StrCat("tar member \"", name, "\": ", size,
                                                   " bytes; a ustar header holds under 8 GiB"));
  }
  absl::string_view prefix, rest = name;
  if (name.size() > 100) {
    // The longest prefix that fits leaves the shortest rest.
    const size_t slash = name.substr(0, 156).rfind('/');
    if (slash == absl::string_view::npos || slash == 0 || name.size() - slash - 1 > 100 ||
        slash + 1 == name.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tar member \"", name,
                       "\": too long for a ustar header (100 bytes, or a folder "
                       "prefix of up to 155 and a '/')"));
    }
    prefix = name.substr(0, slash);
    rest = name.substr(slash + 1);
  }
  std::string header(kTarBlockBytes, '\0');
  char* block = header.data();
  PutText(block + 0, rest);
  PutOctal(block + 100, 8, 0644);  // mode
  PutOctal(block + 108, 8, 0);     // uid
  PutOctal(block + 116, 8, 0);     // gid
  PutOctal(block + 124, 12, size);
  PutOctal(block + 136, 12, kTarFixedMtime);
  block[156] = '0';  // a regular file
  PutText(block + 257, absl::string_view(kUstarMagicAndVersion, 8));
  PutOctal(block + 329, 8, 0);  // devmajor
  PutOctal(block + 337, 8, 0);  // devminor
  PutText(block + 345, prefix);
  // Summed with the checksum field as spaces; written as six digits, a NUL
  // and the last space, as tarfile and GNU tar write it.
  std::memset(block + 148, ' ', 8);
  unsigned sum = 0;
  for (char c : header) sum += static_cast<unsigned char>(c);
  PutOctal(block + 148, 7, sum);
  return header;
}

TarWriter::TarWriter(const std::string& path, std::string shown) : file_(path, std::move(shown)) {}

absl::StatusOr<uint64_t> TarWriter::Add(absl::string_view name, absl::string_view data) {
  ASSIGN_OR_RETURN(const std::string header, UstarHeader(name, data.size()));
  static const char kZeros[kTarBlockBytes] = {};
  file_.Write(header.data(), header.size());
  const uint64_t data_offset = bytes_ + kTarBlockBytes;
  file_.Write(data.data(), data.size());
  file_.Write(kZeros, TarPaddedSize(data.size()) - data.size());
  bytes_ = data_offset + TarPaddedSize(data.size());
  return data_offset;
}

absl::Status TarWriter::Finish() {
  static const char kZeros[2 * kTarBlockBytes] = {};
  file_.Write(kZeros, sizeof(kZeros));
  return file_.Finish();
}

}  // namespace pipeline
