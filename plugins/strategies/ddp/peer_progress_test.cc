#include "plugins/strategies/ddp/peer_progress.h"

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "torch/csrc/distributed/c10d/HashStore.hpp"

namespace pipeline {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(PeerProgressTest, RecordsRoundTrip) {
  ProgressRecord record{12, 7, "10.0.0.2", "all-reduce of gradient bucket 2 of 3"};
  ProgressRecord decoded;
  ASSERT_TRUE(DecodeProgress(EncodeProgress(record), &decoded));
  EXPECT_EQ(decoded.number, 12);
  EXPECT_EQ(decoded.heartbeat, 7);
  EXPECT_EQ(decoded.host, "10.0.0.2");
  EXPECT_EQ(decoded.collective, "all-reduce of gradient bucket 2 of 3");
  EXPECT_FALSE(DecodeProgress("12 all-reduce", &decoded));
}

void Publish(c10d::Store& store, int rank, const ProgressRecord& record) {
  const std::string value = EncodeProgress(record);
  store.set(absl::StrCat("pipeline/progress/", rank),
            std::vector<uint8_t>(value.begin(), value.end()));
}

// Rank 1 stopped publishing (cut off, or SIGSTOPped) in an earlier
// collective: rank 0 names it as behind and as silent, with its host.
TEST(PeerProgressTest, ARankWhoseHeartbeatStoppedIsNamedWithItsHost) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  PeerProgress progress(store, 0, 2, "10.0.0.1", "10.0.0.1:29500");
  progress.Enter("broadcast of the buffers");
  progress.Enter("all-reduce of gradient bucket 1 of 1");
  Publish(*store, 1, {1, 40, "10.0.0.2", "broadcast of the buffers"});
  const std::string text = progress.DescribeLaggards(/*check_heartbeats=*/true);
  EXPECT_THAT(text, HasSubstr("this is collective number 2 of this rank, and rank 1 (on 10.0.0.2) "
                              "has not been heard from for 1.5 s: its host is unreachable from "
                              "the store's, or the process is stopped (the last it said: "
                              "collective number 1, broadcast of the buffers)"));
  // Without the heartbeat check (a peer that closed its connection), at
  // once and without the guess.
  const std::string at_once = progress.DescribeLaggards(/*check_heartbeats=*/false);
  EXPECT_THAT(at_once, HasSubstr("and rank 1 has not reached it: its last was number 1"));
  EXPECT_THAT(at_once, Not(HasSubstr("not been heard from")));
}

// A live rank that is merely behind (deadlocked in its forward pass, say)
// keeps its heartbeat: behind, but not silent.
TEST(PeerProgressTest, ALiveRankBehindIsNotCalledUnreachable) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  PeerProgress progress(store, 0, 2, "10.0.0.1", "10.0.0.1:29500");
  progress.Enter("broadcast of the buffers");
  progress.Enter("all-reduce of gradient bucket 1 of 1");
  std::atomic<bool> done{false};
  std::thread beating([&] {
    for (long long beat = 1; !done; ++beat) {
      Publish(*store, 1, {1, beat, "10.0.0.2", "broadcast of the buffers"});
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  const std::string text = progress.DescribeLaggards(/*check_heartbeats=*/true);
  done = true;
  beating.join();
  EXPECT_THAT(text, HasSubstr("rank 1 has not reached it"));
  EXPECT_THAT(text, Not(HasSubstr("not been heard from")));
}

}  // namespace
}  // namespace pipeline
