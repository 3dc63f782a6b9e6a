// The launchers' rendezvous of an elastic job, with every node in this
// process on loopback: the first to connect hosts the store, the others
// join it. Nothing waits on a clock: rounds here form by reaching MAX, or
// with a last call of 0, and a node waiting for the next round is released
// by an event (a new round, the end of the job).

#include "pipeline/launch/elastic_rendezvous.h"

#include <future>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/free_port.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

RendezvousOptions Options(int port, int min, int max) {
  RendezvousOptions options;
  options.host = "127.0.0.1";
  options.port = port;
  options.nodes = {min, max, true};
  options.nproc_per_node = 2;
  options.config_text = "trainer { epochs: 3 }";
  // Rounds here form at MAX; a last call would only slow them.
  options.last_call = std::chrono::hours(1);
  return options;
}

std::unique_ptr<ElasticRendezvous> Connect(const RendezvousOptions& options) {
  auto rendezvous = ElasticRendezvous::Connect(options);
  EXPECT_TRUE(rendezvous.ok()) << rendezvous.status();
  return rendezvous.ok() ? std::move(*rendezvous) : nullptr;
}

std::future<absl::StatusOr<RoundMembership>> JoinInBackground(ElasticRendezvous& node,
                                                              int first_round) {
  return std::async(std::launch::async, [&node, first_round] { return node.JoinRound(first_round); });
}

TEST(NodeRangeTest, ACountIsAFixedGroupAndMinMaxIsElastic) {
  auto fixed = ParseNodeRange("3");
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->min, 3);
  EXPECT_EQ(fixed->max, 3);
  EXPECT_FALSE(fixed->elastic);
  auto elastic = ParseNodeRange("1:4");
  ASSERT_TRUE(elastic.ok());
  EXPECT_EQ(elastic->min, 1);
  EXPECT_EQ(elastic->max, 4);
  EXPECT_TRUE(elastic->elastic);
}

TEST(NodeRangeTest, ABadRangeIsAFlagErrorThatSaysWhy) {
  EXPECT_THAT(ParseNodeRange("3:2").status().message(),
              HasSubstr("--nnodes=3:2: MIN (3) is larger than MAX (2)"));
  EXPECT_THAT(ParseNodeRange("0:2").status().message(), HasSubstr("MIN is 0, at least 1"));
  EXPECT_THAT(ParseNodeRange("0").status().message(), HasSubstr("MIN is 0"));
  EXPECT_THAT(ParseNodeRange("a:b").status().message(), HasSubstr("not a number"));
  EXPECT_THAT(ParseNodeRange("1:2:3").status().message(), HasSubstr("more than one ':'"));
  EXPECT_THAT(ParseNodeRange("3:2").status().message(), HasSubstr("1 <= MIN <= MAX"));
}

TEST(ElasticRendezvousTest, TheFirstLauncherHostsAndARoundFormsAtMax) {
  const RendezvousOptions options = Options(testing::FreePort(), 1, 2);
  auto host = Connect(options);
  auto guest = Connect(options);
  ASSERT_TRUE(host && guest);
  EXPECT_TRUE(host->is_host());
  EXPECT_FALSE(guest->is_host());
  auto host_round = JoinInBackground(*host, 0);
  auto guest_round = guest->JoinRound(0);
  auto hosted = host_round.get();
  ASSERT_TRUE(hosted.ok()) << hosted.status();
  ASSERT_TRUE(guest_round.ok()) << guest_round.status();
  EXPECT_EQ(hosted->round, 0);
  EXPECT_EQ(hosted->nnodes, 2);
  EXPECT_EQ(hosted->node_rank, 0);
  EXPECT_EQ(guest_round->nnodes, 2);
  EXPECT_EQ(guest_round->node_rank, 1);
  EXPECT_EQ(guest_round->worker_port, hosted->worker_port);
  EXPECT_GT(hosted->worker_port, 0);
  EXPECT_NE(hosted->worker_port, options.port);
}

TEST(ElasticRendezvousTest, WithMinNodesTheRoundFormsWhenTheLastCallEnds) {
  RendezvousOptions options = Options(testing::FreePort(), 1, 3);
  options.last_call = std::chrono::milliseconds(0);
  auto host = Connect(options);
  ASSERT_TRUE(host);
  auto round = host->JoinRound(0);
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_EQ(round->nnodes, 1);
}

// Node 1 is lost after round 0; node 2 arrived during it and waited. The
// next round is the host and node 2, which takes the free node rank 1.
TEST(ElasticRendezvousTest, ANodeArrivingDuringARoundJoinsTheNext) {
  const RendezvousOptions options = Options(testing::FreePort(), 1, 2);
  auto host = Connect(options);
  auto lost = Connect(options);
  ASSERT_TRUE(host && lost);
  auto host_round = JoinInBackground(*host, 0);
  ASSERT_TRUE(lost->JoinRound(0).ok());
  ASSERT_TRUE(host_round.get().ok());
  auto late = Connect(options);
  ASSERT_TRUE(late);
  auto late_round = JoinInBackground(*late, 0);
  // The round it found is formed: it waits (until the round below opens).
  ASSERT_TRUE(host->OpenNextRound(0).ok());
  auto current = host->CurrentRound();
  ASSERT_TRUE(current.ok());
  EXPECT_EQ(*current, 1);
  auto next = host->JoinRound(1);
  ASSERT_TRUE(next.ok()) << next.status();
  auto joined = late_round.get();
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_EQ(next->round, 1);
  EXPECT_EQ(next->nnodes, 2);
  EXPECT_EQ(joined->round, 1);
  EXPECT_EQ(joined->node_rank, 1);
  EXPECT_EQ(joined->worker_port, next->worker_port);
  EXPECT_NE(next->worker_port, 0);
}

TEST(ElasticRendezvousTest, OpeningTheNextRoundFromAnOldOneChangesNothing) {
  const RendezvousOptions options = Options(testing::FreePort(), 1, 1);
  auto host = Connect(options);
  ASSERT_TRUE(host);
  ASSERT_TRUE(host->JoinRound(0).ok());
  ASSERT_TRUE(host->OpenNextRound(0).ok());
  ASSERT_TRUE(host->OpenNextRound(0).ok());  // a second node saw the same failure
  EXPECT_EQ(*host->CurrentRound(), 1);
}

TEST(ElasticRendezvousTest, ANodeWaitingWhenTheJobEndsIsToldSo) {
  const RendezvousOptions options = Options(testing::FreePort(), 1, 1);
  auto host = Connect(options);
  ASSERT_TRUE(host);
  ASSERT_TRUE(host->JoinRound(0).ok());
  auto late = Connect(options);
  ASSERT_TRUE(late);
  auto waiting = JoinInBackground(*late, 0);
  host->MarkJobDone();
  EXPECT_TRUE(absl::IsNotFound(waiting.get().status()));
}

TEST(ElasticRendezvousTest, ANodeWithAnotherConfigOrWorkerCountIsRefused) {
  const RendezvousOptions options = Options(testing::FreePort(), 1, 2);
  auto host = Connect(options);
  ASSERT_TRUE(host);
  RendezvousOptions other_config = options;
  other_config.config_text = "trainer { epochs: 4 }";
  auto refused = Connect(other_config)->JoinRound(0);
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status()));
  EXPECT_THAT(refused.status().message(),
              HasSubstr("this node's resolved config differs from the rendezvous host's"));
  RendezvousOptions other_count = options;
  other_count.nproc_per_node = 3;
  auto counted = Connect(other_count)->JoinRound(0);
  EXPECT_THAT(counted.status().message(),
              HasSubstr("this node runs 3 workers and the rendezvous host 2"));
}

TEST(ElasticRendezvousTest, NoHostWithinTheJoinTimeoutIsAnError) {
  RendezvousOptions options = Options(testing::FreePort(), 1, 2);
  // Not this machine's address (or this launcher would host): TEST-NET-1
  // (RFC 5737) is never assigned.
  options.host = "192.0.2.1";
  options.join_timeout = std::chrono::seconds(1);
  auto rendezvous = ElasticRendezvous::Connect(options);
  ASSERT_FALSE(rendezvous.ok());
  EXPECT_THAT(rendezvous.status().message(), HasSubstr("no elastic rendezvous answered at 192.0.2.1:"));
}

}  // namespace
}  // namespace pipeline
