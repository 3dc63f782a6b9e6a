#include "pipeline/reporting/event_file_writer.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pipeline/util/crc32c.h"

namespace pipeline {
namespace {

// Protobuf wire types.
constexpr int kVarint = 0;
constexpr int kFixed64 = 1;
constexpr int kLengthDelimited = 2;
constexpr int kFixed32 = 5;

void PutVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

void PutTag(int field, int wire_type, std::string* out) {
  PutVarint(static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type), out);
}

void PutLittleEndian(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(value >> (8 * i)));
}

void PutBytes(int field, std::string_view bytes, std::string* out) {
  PutTag(field, kLengthDelimited, out);
  PutVarint(bytes.size(), out);
  out->append(bytes.data(), bytes.size());
}

void PutWallTime(double wall_time, std::string* out) {
  uint64_t bits;
  std::memcpy(&bits, &wall_time, sizeof bits);
  PutTag(1, kFixed64, out);
  PutLittleEndian(bits, 8, out);
}

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace

std::string EncodeTfRecord(std::string_view data) {
  std::string length;
  PutLittleEndian(data.size(), 8, &length);
  std::string record = length;
  PutLittleEndian(MaskCrc32c(Crc32c(length)), 4, &record);
  record.append(data.data(), data.size());
  PutLittleEndian(MaskCrc32c(Crc32c(data)), 4, &record);
  return record;
}

std::string EncodeFileVersionEvent(double wall_time) {
  std::string event;
  PutWallTime(wall_time, &event);
  PutBytes(3, "brain.Event:2", &event);
  return event;
}

std::string EncodeScalarEvent(double wall_time, int64_t step, const Scalars& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string encoded;
    PutBytes(1, tag, &encoded);
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    PutTag(2, kFixed32, &encoded);
    PutLittleEndian(bits, 4, &encoded);
    PutBytes(1, encoded, &summary);
  }
  std::string event;
  PutWallTime(wall_time, &event);
  PutTag(2, kVarint, &event);
  PutVarint(static_cast<uint64_t>(step), &event);
  PutBytes(5, summary, &event);
  return event;
}

absl::StatusOr<std::unique_ptr<EventFileWriter>> EventFileWriter::Create(const std::string& dir) {
  const double now = Now();
  // TensorFlow's own naming, which TensorBoard's directory watcher looks for.
  const std::string path =
      (std::filesystem::path(dir) /
       absl::StrFormat("events.out.tfevents.%010d.%s", static_cast<int64_t>(now), HostName()))
          .string();
  std::ofstream file(path, std::ios::binary | std::ios::app);
  if (!file) {
    return absl::FailedPreconditionError(absl::StrCat("cannot create the TensorBoard event file ",
                                                      path, ": ", std::strerror(errno)));
  }
  std::unique_ptr<EventFileWriter> writer(new EventFileWriter(path, std::move(file)));
  if (absl::Status status = writer->WriteRecord(EncodeFileVersionEvent(now)); !status.ok()) {
    return status;
  }
  return writer;
}

absl::Status EventFileWriter::Write(int64_t step, const Scalars& scalars) {
  return WriteRecord(EncodeScalarEvent(Now(), step, scalars));
}

absl::Status EventFileWriter::WriteRecord(std::string_view data) {
  const std::string record = EncodeTfRecord(data);
  file_.write(record.data(), static_cast<std::streamsize>(record.size()));
  file_.flush();
  if (file_) return absl::OkStatus();
  // A full disk is kResourceExhausted, as the checkpoint writer's errors.
  const int error_number = errno;
  const std::string message =
      absl::StrCat("cannot write ", path_, ": ", std::strerror(error_number));
  return error_number == ENOSPC || error_number == EDQUOT ? absl::ResourceExhaustedError(message)
                                                          : absl::InternalError(message);
}

}  // namespace pipeline
