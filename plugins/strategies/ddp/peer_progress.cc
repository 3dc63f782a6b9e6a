#include "plugins/strategies/ddp/peer_progress.h"

#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace pipeline {
namespace {

constexpr auto kPublishInterval = std::chrono::milliseconds(500);

std::string KeyOf(int rank) { return absl::StrCat("pipeline/progress/", rank); }

}  // namespace

std::string EncodeProgress(long long number, const std::string& collective) {
  return absl::StrCat(number, " ", collective);
}

bool DecodeProgress(const std::string& value, long long* number, std::string* collective) {
  const size_t space = value.find(' ');
  if (space == std::string::npos) return false;
  if (!absl::SimpleAtoi(value.substr(0, space), number)) return false;
  *collective = value.substr(space + 1);
  return true;
}

struct PeerProgress::State {
  c10::intrusive_ptr<c10d::Store> store;
  int rank = 0;
  int world_size = 1;
  std::mutex mutex;
  std::condition_variable changed;
  long long number = 0;  // collectives entered
  std::string collective;
  bool stop = false;

  void Publish() {
    long long published = 0;
    std::unique_lock<std::mutex> lock(mutex);
    while (!stop) {
      changed.wait_for(lock, kPublishInterval);
      if (stop || number == published) continue;
      const std::string value = EncodeProgress(number, collective);
      published = number;
      lock.unlock();
      try {
        store->set(KeyOf(rank), std::vector<uint8_t>(value.begin(), value.end()));
      } catch (const std::exception&) {
        return;  // the store is gone: the job is ending, or will on its own timeout
      }
      lock.lock();
    }
  }
};

PeerProgress::PeerProgress(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size)
    : state_(std::make_shared<State>()) {
  state_->store = std::move(store);
  state_->rank = rank;
  state_->world_size = world_size;
  std::thread([state = state_] { state->Publish(); }).detach();
}

PeerProgress::~PeerProgress() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stop = true;
  }
  state_->changed.notify_all();
}

void PeerProgress::Enter(const std::string& collective) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  ++state_->number;
  state_->collective = collective;
}

std::string PeerProgress::DescribeLaggards(std::chrono::milliseconds deadline) {
  long long mine = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    mine = state_->number;
  }
  // Read on a thread of its own: if the store's host is stopped, its reads
  // block, and this rank must still report its error and exit.
  auto answer = std::make_shared<std::promise<std::string>>();
  std::future<std::string> text = answer->get_future();
  std::thread([state = state_, answer, mine] {
    std::string behind;
    for (int r = 0; r < state->world_size; ++r) {
      if (r == state->rank) continue;
      long long number = 0;
      std::string collective;
      try {
        if (state->store->check({KeyOf(r)})) {
          const std::vector<uint8_t> value = state->store->get(KeyOf(r));
          DecodeProgress(std::string(value.begin(), value.end()), &number, &collective);
        }
      } catch (const std::exception& error) {
        answer->set_value(absl::StrCat("; the store could not say where the other ranks are (",
                                       error.what(), ")"));
        return;
      }
      if (number >= mine) continue;
      absl::StrAppend(&behind, behind.empty() ? "" : "; ", "rank ", r);
      if (number == 0) {
        absl::StrAppend(&behind, " has entered no collective yet");
      } else {
        absl::StrAppend(&behind, " has not reached it: its last was number ", number, ", ",
                        collective);
      }
    }
    answer->set_value(behind.empty()
                          ? absl::StrCat("; every rank has reached this collective (number ", mine,
                                         "), so it is the transfer itself that stalled")
                          : absl::StrCat("; this is collective number ", mine,
                                         " of this rank, and ", behind));
  }).detach();
  if (text.wait_for(deadline) != std::future_status::ready) {
    return absl::StrCat("; the store did not answer within ", deadline.count() / 1000.0,
                        " s, so where the other ranks are is unknown (is rank 0 stopped?)");
  }
  return text.get();
}

}  // namespace pipeline
