#include "plugins/strategies/ddp/process_group.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/free_port.h"
#include "pipeline/util/c10d_compat.h"
#include "plugins/strategies/ddp/loopback_ranks.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;
using testing::EmptyEnvironment;
using testing::FreePort;
using testing::LoopbackRendezvous;
using testing::RunOnThreads;

DdpOptions WithTimeout(int seconds) {
  DdpOptions options;
  options.set_timeout_seconds(seconds);
  return options;
}

// Connects the ranks `rendezvous` lists, each on a thread, each giving up
// after its `timeout_seconds`; returns each one's error ("" when it joined
// a group). The groups are kept until every thread has returned, so a rank
// 0 that connected still serves its store to the late ones; then they go
// to `kept`, if given.
std::vector<std::string> ConnectOnThreads(const std::vector<Rendezvous>& rendezvous,
                                          const std::vector<int>& timeout_seconds,
                                          std::vector<ProcessGroup>* kept = nullptr) {
  std::mutex mutex;
  std::vector<ProcessGroup> connected;
  const std::vector<std::string> errors =
      RunOnThreads(static_cast<int>(rendezvous.size()), [&](int i) -> absl::Status {
        auto group = ConnectProcessGroup(WithTimeout(timeout_seconds[i]), EmptyEnvironment(),
                                         rendezvous[i], torch::kCPU);
        if (!group.ok()) return group.status();
        if (group->group->getRank() != rendezvous[i].rank ||
            group->group->getSize() != rendezvous[i].world_size) {
          return absl::InternalError(absl::StrCat("rank ", group->group->getRank(), " of ",
                                                  group->group->getSize()));
        }
        std::lock_guard<std::mutex> lock(mutex);
        connected.push_back(*std::move(group));
        return absl::OkStatus();
      });
  if (kept != nullptr) *kept = std::move(connected);
  return errors;
}

TEST(ProcessGroupTest, RanksOfOneAttemptFormAGroup) {
  const int port = FreePort();
  EXPECT_EQ(ConnectOnThreads({LoopbackRendezvous(0, 2, port), LoopbackRendezvous(1, 2, port)},
                             {30, 30}),
            (std::vector<std::string>{"", ""}));
}

// Under torchrun the agent serves the store on MASTER_PORT and the ranks,
// rank 0 included, join it as clients.
TEST(ProcessGroupTest, UnderTorchrunTheRanksJoinTheAgentsStore) {
  const int port = FreePort();
  c10d::TCPStoreOptions agent_options;
  agent_options.port = static_cast<uint16_t>(port);
  agent_options.isServer = true;
  agent_options.waitWorkers = false;
  UseClassicStoreBackend(agent_options);
  c10d::TCPStore agent("127.0.0.1", agent_options);
  std::vector<Rendezvous> ranks = {LoopbackRendezvous(0, 2, port), LoopbackRendezvous(1, 2, port)};
  for (Rendezvous& rank : ranks) rank.agent_store = true;
  EXPECT_EQ(ConnectOnThreads(ranks, {30, 30}), (std::vector<std::string>{"", ""}));
  // Under the prefix PyTorch's workers use.
  EXPECT_TRUE(agent.check({"/worker/attempt_0/pipeline/restart_count"}));
}

// Of two processes started as rank 1, the second to claim the rank is
// refused; the first joins rank 0's group.
TEST(ProcessGroupTest, ARankStartedTwiceIsRefused) {
  const int port = FreePort();
  std::vector<std::string> errors = ConnectOnThreads(
      {LoopbackRendezvous(0, 2, port), LoopbackRendezvous(1, 2, port),
       LoopbackRendezvous(1, 2, port)},
      {30, 30, 30});
  EXPECT_EQ(errors[0], "");
  std::sort(errors.begin() + 1, errors.end());
  EXPECT_EQ(errors[1], "");
  EXPECT_THAT(errors[2], HasSubstr(absl::StrCat(
                             "ddp: rendezvous of 2 ranks at 127.0.0.1:", port, " (rank 1): RANK=1 "
                             "is already taken by another process of this job; give each process "
                             "its own rank")));
}

// After a restart, a rank still of the attempt before that reaches the new
// attempt's store is refused at once, and the new attempt's ranks connect.
TEST(ProcessGroupTest, ARankOfAnEarlierAttemptIsRefused) {
  const int port = FreePort();
  const std::vector<std::string> errors = ConnectOnThreads(
      {LoopbackRendezvous(0, 2, port, /*restart_count=*/1),
       LoopbackRendezvous(1, 2, port, /*restart_count=*/0),
       LoopbackRendezvous(1, 2, port, /*restart_count=*/1)},
      {30, 30, 30});
  EXPECT_EQ(errors[0], "");
  EXPECT_THAT(errors[1], HasSubstr("rank 0 runs attempt 1 of this job (TORCHELASTIC_RESTART_COUNT) "
                                   "and this rank attempt 0; restart every node's launcher "
                                   "together"));
  EXPECT_EQ(errors[2], "");
}

// A restarted rank that finds only the store of the attempt before (its
// rank 0 not restarted yet, its group still up) waits for its own, and
// gives up after its timeout saying so.
TEST(ProcessGroupTest, ARankOfALaterAttemptWaitsForItsOwnStore) {
  const int port = FreePort();
  std::vector<ProcessGroup> earlier_attempt;
  ASSERT_EQ(ConnectOnThreads({LoopbackRendezvous(0, 2, port, /*restart_count=*/0),
                              LoopbackRendezvous(1, 2, port, /*restart_count=*/0)},
                             {30, 30}, &earlier_attempt),
            (std::vector<std::string>{"", ""}));
  const auto group =
      ConnectProcessGroup(WithTimeout(1), EmptyEnvironment(),
                          LoopbackRendezvous(1, 2, port, /*restart_count=*/1), torch::kCPU);
  EXPECT_THAT(group.status().message(),
              HasSubstr("for timeout_seconds (1) only the store of an earlier attempt answered, "
                        "not that of attempt 1"));
}

TEST(ProcessGroupTest, APortInUseSaysToChooseAnother) {
  const int listening = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listening, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listening, 1), 0);
  socklen_t length = sizeof(address);
  getsockname(listening, reinterpret_cast<sockaddr*>(&address), &length);
  const int port = ntohs(address.sin_port);
  const auto group = ConnectProcessGroup(WithTimeout(5), EmptyEnvironment(),
                                         LoopbackRendezvous(0, 1, port), torch::kCPU);
  close(listening);
  EXPECT_EQ(group.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(group.status().message(),
              HasSubstr(absl::StrCat("ddp: rendezvous of 1 ranks at 127.0.0.1:", port)));
  EXPECT_THAT(group.status().message(),
              HasSubstr(absl::StrCat("Another process holds port ", port,
                                     ": choose a free one with MASTER_PORT (or train "
                                     "--master_port)")));
}

}  // namespace
}  // namespace pipeline
