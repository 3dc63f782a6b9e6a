#include "plugins/strategies/data_parallel/replica_threads.h"

#include <atomic>
#include <set>
#include <stdexcept>
#include <string>

#include "gtest/gtest.h"

namespace pipeline {
namespace {

TEST(ReplicaThreadsTest, RunsEveryTaskOnItsOwnThreadEveryTime) {
  std::atomic<int> started{0};
  ReplicaThreads threads(3, [&] { ++started; });
  EXPECT_EQ(threads.count(), 3);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::thread::id> ids(3);
    std::vector<int> values(3, 0);
    std::vector<std::function<void()>> tasks;
    for (int i = 0; i < 3; ++i) {
      tasks.push_back([&, i] {
        ids[i] = std::this_thread::get_id();
        values[i] = round * 10 + i;
      });
    }
    threads.Run(tasks);
    EXPECT_EQ(values, (std::vector<int>{round * 10, round * 10 + 1, round * 10 + 2}));
    EXPECT_EQ(ids[0], std::this_thread::get_id());
    EXPECT_EQ(std::set<std::thread::id>(ids.begin(), ids.end()).size(), 3u);
  }
  EXPECT_EQ(started.load(), 2);
}

TEST(ReplicaThreadsTest, RethrowsTheFirstFailureAfterAllTasksFinish) {
  ReplicaThreads threads(3, nullptr);
  std::atomic<int> finished{0};
  std::vector<std::function<void()>> tasks = {
      [&] { ++finished; },
      [&] { throw std::runtime_error("replica 1 failed"); },
      [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        ++finished;
      },
  };
  try {
    threads.Run(tasks);
    FAIL() << "expected the failure of task 1";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()), "replica 1 failed");
  }
  EXPECT_EQ(finished.load(), 2);
  // The threads still work after a failure.
  int value = 0;
  threads.Run({nullptr, [&] { value = 7; }, nullptr});
  EXPECT_EQ(value, 7);
}

}  // namespace
}  // namespace pipeline
