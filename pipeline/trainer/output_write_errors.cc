#include "pipeline/trainer/output_write_errors.h"

#include <cerrno>
#include <cstring>
#include <ostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pipeline/trainer/run_info.h"

namespace pipeline {

OutputWriteErrors::OutputWriteErrors(CheckpointConfig::WriteErrorPolicy policy,
                                     std::string output_dir,
                                     std::function<void(const std::string&)> print,
                                     std::ostream* events)
    : policy_(policy),
      output_dir_(std::move(output_dir)),
      print_(std::move(print)),
      events_(events) {}

absl::Status OutputWriteErrors::Checkpoint(const absl::Status& written, const std::string& path,
                                           bool may_continue) {
  return Handle(written, path, "checkpoint", may_continue, /*warn=*/true);
}

absl::Status OutputWriteErrors::Log(const absl::Status& written, const std::string& path) {
  return Handle(written, path, "output_dir", /*may_continue=*/true,
                /*warn=*/warned_.insert(path).second);
}

absl::Status OutputWriteErrors::Handle(const absl::Status& written, const std::string& path,
                                       const char* what, bool may_continue, bool warn) {
  if (written.ok()) return written;
  const bool stop = policy_ == CheckpointConfig::STOP || !may_continue;
  if (events_ != nullptr && warn) {
    *events_ << "{\"event\":\"write_error\",\"file\":" << JsonQuote(path)
             << ",\"error\":" << JsonQuote(std::string(written.message()))
             << ",\"action\":\"" << (stop ? "stop" : "continue") << "\"}\n"
             << std::flush;
  }
  if (!stop) {
    if (warn && print_) {
      print_(absl::StrCat("warning: ", what, ": ", written.message(),
                          "; continuing without it (checkpoint.on_write_error: CONTINUE)"));
    }
    return absl::OkStatus();
  }
  // A full disk is the common case, and the one with a cure to name.
  const std::string cure =
      written.code() == absl::StatusCode::kResourceExhausted
          ? absl::StrCat("free space on the disk of ", output_dir_,
                         " (or move that folder to a disk with room and set output_dir to it)")
          : absl::StrCat("once ", output_dir_, " can be written again");
  const std::string resume =
      resume_point_.empty()
          ? "run again: no checkpoint has been written yet, so the run starts over"
          : absl::StrCat("--resume=auto continues from ", resume_point_);
  return absl::Status(written.code(), absl::StrCat(what, ": ", written.message(), "; ", cure,
                                                   ", then ", resume));
}

absl::Status StreamWriteStatus(const std::ostream& stream, const std::string& path) {
  if (stream.good()) return absl::OkStatus();
  const int error_number = errno;
  if (error_number == 0) return absl::InternalError(absl::StrCat("cannot write ", path));
  const std::string message =
      absl::StrCat("cannot write ", path, ": ", std::strerror(error_number));
  return error_number == ENOSPC || error_number == EDQUOT ? absl::ResourceExhaustedError(message)
                                                          : absl::InternalError(message);
}

}  // namespace pipeline
