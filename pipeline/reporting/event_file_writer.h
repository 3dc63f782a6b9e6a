#ifndef PIPELINE_REPORTING_EVENT_FILE_WRITER_H_
#define PIPELINE_REPORTING_EVENT_FILE_WRITER_H_

// TensorBoard event files: `events.out.tfevents.<seconds>.<host>` holding
// TFRecords of tensorflow.Event protos, which `tensorboard --logdir <dir>`
// reads as scalar curves. Only the fields TensorBoard reads for scalars are
// written, encoded by hand, so the build needs no TensorFlow protos:
//
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3;
//             Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; }
//
// Each record: uint64 length, masked CRC-32C of the length, the bytes,
// masked CRC-32C of the bytes (little-endian).

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pipeline {

using Scalars = std::vector<std::pair<std::string, float>>;

class EventFileWriter {
 public:
  // Creates the file in `dir` (which must exist) and writes the first
  // record, the file version "brain.Event:2" that TensorBoard checks.
  static absl::StatusOr<std::unique_ptr<EventFileWriter>> Create(const std::string& dir);

  // One Event at `step` with one Summary value per scalar, stamped with the
  // current time; flushed, so TensorBoard sees it while training runs.
  absl::Status Write(int64_t step, const Scalars& scalars);

  const std::string& path() const { return path_; }

 private:
  EventFileWriter(std::string path, std::ofstream file)
      : path_(std::move(path)), file_(std::move(file)) {}
  absl::Status WriteRecord(std::string_view data);

  std::string path_;
  std::ofstream file_;
};

// The pieces, for tests.
std::string EncodeTfRecord(std::string_view data);
std::string EncodeFileVersionEvent(double wall_time);
std::string EncodeScalarEvent(double wall_time, int64_t step, const Scalars& scalars);

}  // namespace pipeline

#endif  // PIPELINE_REPORTING_EVENT_FILE_WRITER_H_
