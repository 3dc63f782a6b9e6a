#ifndef PLUGINS_STRATEGIES_DATA_PARALLEL_REPLICA_THREADS_H_
#define PLUGINS_STRATEGIES_DATA_PARALLEL_REPLICA_THREADS_H_

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace pipeline {

// A fixed set of threads, one per model replica, that run one task each per
// call. Threads persist across steps because each keeps per-thread state
// LibTorch sets up once (its OpenMP team, its thread-local grad mode).
class ReplicaThreads {
 public:
  // `count` tasks per Run: task 0 on the calling thread, the others on
  // count - 1 threads started here; `on_start` runs first on each of those.
  ReplicaThreads(int count, std::function<void()> on_start);
  ~ReplicaThreads();
  ReplicaThreads(const ReplicaThreads&) = delete;
  ReplicaThreads& operator=(const ReplicaThreads&) = delete;

  // Runs tasks[i] on thread i, all at once, and returns when all are done.
  // The first task that threw (lowest index) has its exception rethrown
  // here, after every task has finished, so no task outlives the call.
  void Run(const std::vector<std::function<void()>>& tasks);

  int count() const { return static_cast<int>(workers_.size()) + 1; }

 private:
  void Work(int index, const std::function<void()>& on_start);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable done_;
  const std::vector<std::function<void()>>* tasks_ = nullptr;
  std::vector<std::exception_ptr> errors_;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stopping_ = false;
};

}  // namespace pipeline

#endif  // PLUGINS_STRATEGIES_DATA_PARALLEL_REPLICA_THREADS_H_
