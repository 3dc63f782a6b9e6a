#include "plugins/strategies/data_parallel/replica_threads.h"

namespace pipeline {

ReplicaThreads::ReplicaThreads(int count, std::function<void()> on_start) {
  errors_.resize(count < 1 ? 1 : count);
  for (int i = 1; i < count; ++i) {
    workers_.emplace_back([this, i, on_start] { Work(i, on_start); });
  }
}

ReplicaThreads::~ReplicaThreads() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ReplicaThreads::Work(int index, const std::function<void()>& on_start) {
  if (on_start) on_start();
  uint64_t seen = 0;
  while (true) {
    const std::function<void()>* task = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      if (index < static_cast<int>(tasks_->size())) task = &(*tasks_)[index];
    }
    std::exception_ptr error;
    if (task != nullptr && *task) {
      try {
        (*task)();
      } catch (...) {
        error = std::current_exception();
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      errors_[index] = error;
      if (--pending_ == 0) done_.notify_all();
    }
  }
}

void ReplicaThreads::Run(const std::vector<std::function<void()>>& tasks) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_ = &tasks;
    pending_ = static_cast<int>(workers_.size());
    for (std::exception_ptr& error : errors_) error = nullptr;
    ++generation_;
  }
  start_.notify_all();
  std::exception_ptr first;
  if (!tasks.empty() && tasks[0]) {
    try {
      tasks[0]();
    } catch (...) {
      first = std::current_exception();
    }
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  tasks_ = nullptr;
  if (!first) {
    for (size_t i = 1; i < errors_.size() && !first; ++i) first = errors_[i];
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace pipeline
