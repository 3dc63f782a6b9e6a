#include "pipeline/trainer/output_write_errors.h"

#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pipeline {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const absl::Status kDiskFull = absl::ResourceExhaustedError(
    "cannot write /out/checkpoint_step_10.pt: No space left on device");

TEST(OutputWriteErrorsTest, StopNamesTheCureAndTheResumePoint) {
  std::vector<std::string> lines;
  std::ostringstream events;
  OutputWriteErrors errors(CheckpointConfig::STOP, "/out",
                           [&](const std::string& line) { lines.push_back(line); }, &events);
  errors.set_resume_point("/out/checkpoint_step_5.pt");
  const absl::Status status = errors.Checkpoint(kDiskFull, "/out/checkpoint_step_10.pt");
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(),
            "checkpoint: cannot write /out/checkpoint_step_10.pt: No space left on device; free "
            "space on the disk of /out (or move that folder to a disk with room and set "
            "output_dir to it), then --resume=auto continues from /out/checkpoint_step_5.pt");
  EXPECT_THAT(lines, IsEmpty());
  EXPECT_THAT(events.str(), HasSubstr("\"event\":\"write_error\""));
  EXPECT_THAT(events.str(), HasSubstr("\"action\":\"stop\""));
}

TEST(OutputWriteErrorsTest, StopBeforeAnyCheckpointSaysTheRunStartsOver) {
  OutputWriteErrors errors(CheckpointConfig::STOP, "/out", nullptr, nullptr);
  const absl::Status status =
      errors.Log(absl::InternalError("cannot write /out/metrics.jsonl: Input/output error"),
                 "/out/metrics.jsonl");
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(status.message(), HasSubstr("once /out can be written again, then run again: no "
                                          "checkpoint has been written yet"));
}

TEST(OutputWriteErrorsTest, ContinueWarnsOfEveryCheckpointAndOfALogOnce) {
  std::vector<std::string> lines;
  std::ostringstream events;
  OutputWriteErrors errors(CheckpointConfig::CONTINUE, "/out",
                           [&](const std::string& line) { lines.push_back(line); }, &events);
  EXPECT_TRUE(errors.Checkpoint(kDiskFull, "/out/checkpoint_step_10.pt").ok());
  EXPECT_TRUE(errors.Checkpoint(kDiskFull, "/out/checkpoint_step_10.pt").ok());
  const absl::Status metrics =
      absl::ResourceExhaustedError("cannot write /out/metrics.jsonl: No space left on device");
  EXPECT_TRUE(errors.Log(metrics, "/out/metrics.jsonl").ok());
  EXPECT_TRUE(errors.Log(metrics, "/out/metrics.jsonl").ok());
  EXPECT_TRUE(errors.Log(absl::OkStatus(), "/out/curves.svg").ok());
  const std::string warning =
      "warning: checkpoint: cannot write /out/checkpoint_step_10.pt: No space left on device; "
      "continuing without it (checkpoint.on_write_error: CONTINUE)";
  EXPECT_THAT(lines, ElementsAre(warning, warning,
                                 "warning: output_dir: cannot write /out/metrics.jsonl: No space "
                                 "left on device; continuing without it "
                                 "(checkpoint.on_write_error: CONTINUE)"));
  EXPECT_EQ(events.str(),
            "{\"event\":\"write_error\",\"file\":\"/out/checkpoint_step_10.pt\",\"error\":"
            "\"cannot write /out/checkpoint_step_10.pt: No space left on device\",\"action\":"
            "\"continue\"}\n"
            "{\"event\":\"write_error\",\"file\":\"/out/checkpoint_step_10.pt\",\"error\":"
            "\"cannot write /out/checkpoint_step_10.pt: No space left on device\",\"action\":"
            "\"continue\"}\n"
            "{\"event\":\"write_error\",\"file\":\"/out/metrics.jsonl\",\"error\":\"cannot write "
            "/out/metrics.jsonl: No space left on device\",\"action\":\"continue\"}\n");
}

TEST(OutputWriteErrorsTest, AStoppingRunStopsUnderContinueToo) {
  OutputWriteErrors errors(CheckpointConfig::CONTINUE, "/out", nullptr, nullptr);
  EXPECT_EQ(errors.Checkpoint(kDiskFull, "/out/checkpoint_step_10.pt", /*may_continue=*/false)
                .code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace pipeline
