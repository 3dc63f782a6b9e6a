#include "pipeline/data/tar_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace {

// Field offsets and widths of a ustar header.
constexpr size_t kNameAt = 0, kNameBytes = 100;
constexpr size_t kSizeAt = 124, kSizeBytes = 12;
constexpr size_t kChecksumAt = 148, kChecksumBytes = 8;
constexpr size_t kTypeAt = 156;
constexpr size_t kMagicAt = 257;
constexpr size_t kPrefixAt = 345, kPrefixBytes = 155;

// Long-name and pax records are read whole; a real one is a path.
constexpr uint64_t kMaxRecordBytes = 1 << 20;

// A NUL-terminated field that may fill its width.
absl::string_view Field(const char* block, size_t at, size_t bytes) {
  const char* begin = block + at;
  return absl::string_view(begin, strnlen(begin, bytes));
}

// A numeric field as Python's tarfile reads it: octal text (spaces around
// it, NUL-terminated, empty = 0) or GNU's base-256 (first byte 0x80; 0xff,
// negative, is refused).
std::optional<uint64_t> ParseNumber(const char* block, size_t at, size_t bytes) {
  const auto* field = reinterpret_cast<const unsigned char*>(block + at);
  if (field[0] == 0x80) {
    uint64_t value = 0;
    for (size_t i = 1; i < bytes; ++i) {
      if (value > (std::numeric_limits<uint64_t>::max() >> 8)) return std::nullopt;
      value = value << 8 | field[i];
    }
    return value;
  }
  if (field[0] & 0x80) return std::nullopt;
  const absl::string_view text = absl::StripAsciiWhitespace(Field(block, at, bytes));
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '7' || value > (std::numeric_limits<uint64_t>::max() >> 3)) {
      return std::nullopt;
    }
    value = value << 3 | static_cast<uint64_t>(c - '0');
  }
  return value;
}

bool IsZeroBlock(const char* block) {
  return std::all_of(block, block + kTarBlockBytes, [](char c) { return c == 0; });
}

// Links, devices, folders and fifos: tarfile skips no data after them,
// whatever their size field says.
bool HasData(char type) { return type < '1' || type > '6'; }

std::string Quoted(absl::string_view name) { return absl::StrCat("\"", name, "\""); }

struct PaxFields {
  std::optional<std::string> path;
  std::optional<uint64_t> size;
};

// "<length> <key>=<value>\n" records, <length> counting the whole record.
std::optional<PaxFields> ParsePax(absl::string_view data) {
  PaxFields fields;
  while (!data.empty() && data.front() != '\0') {
    const size_t space = data.find(' ');
    uint64_t length = 0;
    if (space == absl::string_view::npos || !absl::SimpleAtoi(data.substr(0, space), &length) ||
        length <= space + 2 || length > data.size() || data[length - 1] != '\n') {
      return std::nullopt;
    }
    const absl::string_view record = data.substr(space + 1, length - space - 2);
    data.remove_prefix(length);
    const size_t equals = record.find('=');
    if (equals == absl::string_view::npos) return std::nullopt;
    const absl::string_view key = record.substr(0, equals);
    const absl::string_view value = record.substr(equals + 1);
    if (key == "path") fields.path = std::string(value);
    if (key == "size") {
      uint64_t size = 0;
      if (!absl::SimpleAtoi(value, &size)) return std::nullopt;
      fields.size = size;
    }
  }
  return fields;
}

}  // namespace

absl::Status ReadFileRangeInto(int fd, const std::string& shown, uint64_t offset, uint64_t size,
                               char* out) {
  for (uint64_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd, out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      // std::error_code's message, unlike strerror, is safe on many threads.
      return absl::InternalError(
          absl::StrCat(shown, ": read error at byte ", offset + done, ": ",
                       std::error_code(errno, std::generic_category()).message()));
    }
    if (n == 0) {
      return absl::DataLossError(absl::StrCat(shown, ": the file ends at byte ", offset + done,
                                              ", inside the ", size, " bytes from byte ", offset,
                                              " (truncated or changed since it was indexed?)"));
    }
    done += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFileRange(int fd, const std::string& shown, uint64_t offset,
                                          uint64_t size) {
  std::string bytes(size, '\0');
  RETURN_IF_ERROR(ReadFileRangeInto(fd, shown, offset, size, bytes.data()));
  return bytes;
}

bool TarChecksumMatches(const char* block) {
  const std::optional<uint64_t> stored = ParseNumber(block, kChecksumAt, kChecksumBytes);
  if (!stored) return false;
  // The checksum field counts as eight spaces. Old tars summed signed chars.
  int64_t unsigned_sum = 8 * ' ', signed_sum = 8 * ' ';
  for (size_t i = 0; i < kTarBlockBytes; ++i) {
    if (i >= kChecksumAt && i < kChecksumAt + kChecksumBytes) continue;
    unsigned_sum += static_cast<unsigned char>(block[i]);
    signed_sum += static_cast<signed char>(block[i]);
  }
  return static_cast<int64_t>(*stored) == unsigned_sum ||
         static_cast<int64_t>(*stored) == signed_sum;
}

absl::StatusOr<TarHeaderFields> ParseTarHeader(const char* block) {
  if (!TarChecksumMatches(block)) return absl::DataLossError("bad tar header checksum");
  const std::optional<uint64_t> size = ParseNumber(block, kSizeAt, kSizeBytes);
  if (!size) return absl::DataLossError("bad size field in a tar header");
  TarHeaderFields fields;
  fields.size = HasData(block[kTypeAt]) ? *size : 0;
  fields.name = std::string(Field(block, kNameAt, kNameBytes));
  // POSIX ustar only: GNU tar keeps other fields where the prefix would be.
  if (std::memcmp(block + kMagicAt, "ustar\0", 6) == 0) {
    const absl::string_view prefix = Field(block, kPrefixAt, kPrefixBytes);
    if (!prefix.empty()) fields.name = absl::StrCat(prefix, "/", fields.name);
  }
  return fields;
}

TarReader::TarReader(int fd, std::string shown, uint64_t file_bytes)
    : fd_(fd), shown_(std::move(shown)), file_bytes_(file_bytes) {}

absl::Status TarReader::ReadBlock(uint64_t offset, char* block) const {
  if (offset + kTarBlockBytes > file_bytes_) {
    if (offset == file_bytes_) {
      return absl::DataLossError(absl::StrCat(
          shown_, ": truncated: the file ends at byte ", file_bytes_,
          last_name_.empty() ? "" : absl::StrCat(", after member ", Quoted(last_name_)),
          ", without the end-of-archive block (two 512-byte zero blocks)"));
    }
    return absl::DataLossError(absl::StrCat(shown_, ": truncated: the file ends at byte ",
                                            file_bytes_, ", inside the tar header at byte ",
                                            offset));
  }
  return ReadFileRangeInto(fd_, shown_, offset, kTarBlockBytes, block);
}

absl::Status TarReader::CheckDataFits(const std::string& what, uint64_t header_offset,
                                      uint64_t size) const {
  const uint64_t data_offset = header_offset + kTarBlockBytes;
  if (size > file_bytes_ || data_offset + size > file_bytes_) {
    return absl::DataLossError(
        absl::StrCat(shown_, ": truncated: ", what, " (header at byte ", header_offset, ") has ",
                     size, " bytes of data, but the file ends at byte ", file_bytes_));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> TarReader::ReadRecord(uint64_t header_offset, uint64_t size) const {
  if (size > kMaxRecordBytes) {
    return absl::DataLossError(absl::StrCat(shown_, ": the long-name or pax record at byte ",
                                            header_offset, " claims ", size, " bytes (at most ",
                                            kMaxRecordBytes, ")"));
  }
  RETURN_IF_ERROR(CheckDataFits("a long-name or pax record", header_offset, size));
  return ReadFileRange(fd_, shown_, header_offset + kTarBlockBytes, size);
}

absl::StatusOr<std::optional<TarMember>> TarReader::Next() {
  std::optional<std::string> long_name;
  PaxFields pax;
  char block[kTarBlockBytes];
  while (true) {
    const uint64_t header_offset = offset_;
    RETURN_IF_ERROR(ReadBlock(header_offset, block));
    if (IsZeroBlock(block)) {
      if (long_name || pax.path || pax.size) {
        return absl::DataLossError(
            absl::StrCat(shown_, ": the long-name or pax record before byte ", header_offset,
                         " names no member: the archive ends there"));
      }
      return std::nullopt;
    }
    if (header_offset == 0 && static_cast<unsigned char>(block[0]) == 0x1f &&
        static_cast<unsigned char>(block[1]) == 0x8b) {
      return absl::InvalidArgumentError(
          absl::StrCat(shown_,
                       ": is gzip-compressed; indexed reading seeks within a plain .tar, so "
                       "decompress it (gunzip) first"));
    }
    absl::StatusOr<TarHeaderFields> fields = ParseTarHeader(block);
    if (!fields.ok()) {
      return absl::DataLossError(absl::StrCat(
          shown_, ": ", fields.status().message(), " at byte ", header_offset,
          last_name_.empty() ? " (the first header: not a tar file?)"
                             : absl::StrCat(" (after member ", Quoted(last_name_), ")")));
    }
    const char type = block[kTypeAt];
    uint64_t size = pax.size && HasData(type) ? *pax.size : fields->size;
    const std::string name = long_name ? *long_name : pax.path ? *pax.path : fields->name;
    if (type == 'L' || type == 'x' || type == 'g' || type == 'K') {
      ASSIGN_OR_RETURN(const std::string data, ReadRecord(header_offset, size));
      offset_ = header_offset + kTarBlockBytes + TarPaddedSize(size);
      if (type == 'L') {
        long_name = std::string(data.c_str());  // NUL-terminated
      } else if (type == 'x') {
        std::optional<PaxFields> parsed = ParsePax(data);
        if (!parsed) {
          return absl::DataLossError(
              absl::StrCat(shown_, ": bad pax record at byte ", header_offset));
        }
        if (parsed->path) pax.path = parsed->path;
        if (parsed->size) pax.size = parsed->size;
      }
      continue;  // 'g' (global pax) and 'K' (a link's long target) change no member name
    }
    RETURN_IF_ERROR(CheckDataFits(absl::StrCat("member ", Quoted(name)), header_offset, size));
    TarMember member;
    member.name = name;
    member.header_offset = header_offset;
    member.data_offset = header_offset + kTarBlockBytes;
    member.size = size;
    member.type = type;
    offset_ = member.data_offset + TarPaddedSize(size);
    last_name_ = name;
    return member;
  }
}

}  // namespace pipeline
