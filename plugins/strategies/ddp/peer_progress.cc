#include "plugins/strategies/ddp/peer_progress.h"

#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace pipeline {
namespace {

constexpr auto kPublishInterval = std::chrono::milliseconds(500);
// How long a live rank's heartbeat takes at most to move: three
// publications, so one slow store write does not make a rank look cut off.
constexpr auto kSilence = 3 * kPublishInterval;

std::string KeyOf(int rank) { return absl::StrCat("pipeline/progress/", rank); }

// Every other rank's record, or the store's error.
using Records = std::map<int, ProgressRecord>;
Records ReadRecords(c10d::Store& store, int rank, int world_size) {
  Records records;
  for (int r = 0; r < world_size; ++r) {
    if (r == rank) continue;
    ProgressRecord& record = records[r];
    if (store.check({KeyOf(r)})) {
      const std::vector<uint8_t> value = store.get(KeyOf(r));
      DecodeProgress(std::string(value.begin(), value.end()), &record);
    }
  }
  return records;
}

// "rank 1 (on 10.0.0.2)", or "rank 1" before it said where it runs.
std::string RankOn(int rank, const ProgressRecord& record) {
  return record.host.empty() ? absl::StrCat("rank ", rank)
                             : absl::StrCat("rank ", rank, " (on ", record.host, ")");
}

// What `record` says of rank `r`, which has not reached collective `mine`.
std::string Behind(int r, const ProgressRecord& record) {
  if (record.number == 0) return absl::StrCat("rank ", r, " has entered no collective yet");
  return absl::StrCat("rank ", r, " has not reached it: its last was number ", record.number, ", ",
                      record.collective);
}

// The error's tail from the ranks' records: who is behind, and, given an
// `earlier` reading kSilence before, who has gone silent (cut off or
// stopped), whose record is then only the last it said.
std::string DescribeRecords(const Records& records, const std::optional<Records>& earlier,
                            long long mine) {
  std::vector<std::string> named;
  for (const auto& [r, record] : records) {
    if (earlier && record.heartbeat == earlier->at(r).heartbeat) {
      named.push_back(absl::StrCat(
          RankOn(r, record), " has not been heard from for ",
          std::chrono::duration<double>(kSilence).count(),
          " s: its host is unreachable from the store's, or the process is stopped (the last it "
          "said: collective number ", record.number, record.number > 0 ? ", " : "",
          record.collective, ")"));
    } else if (record.number < mine) {
      named.push_back(Behind(r, record));
    }
  }
  if (named.empty()) {
    return absl::StrCat("; every rank has reached this collective (number ", mine,
                        "), so it is the transfer itself that stalled");
  }
  return absl::StrCat("; this is collective number ", mine, " of this rank, and ",
                      absl::StrJoin(named, "; "));
}

}  // namespace

std::string EncodeProgress(const ProgressRecord& record) {
  return absl::StrCat(record.number, " ", record.heartbeat, " ", record.host, " ",
                      record.collective);
}

bool DecodeProgress(const std::string& value, ProgressRecord* record) {
  const std::vector<std::string> parts = absl::StrSplit(value, absl::MaxSplits(' ', 3));
  if (parts.size() != 4) return false;
  if (!absl::SimpleAtoi(parts[0], &record->number)) return false;
  if (!absl::SimpleAtoi(parts[1], &record->heartbeat)) return false;
  record->host = parts[2];
  record->collective = parts[3];
  return true;
}

struct PeerProgress::State {
  c10::intrusive_ptr<c10d::Store> store;
  int rank = 0;
  int world_size = 1;
  std::string store_address;
  std::mutex mutex;
  std::condition_variable changed;
  ProgressRecord record;
  bool stop = false;

  void Publish() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!stop) {
      changed.wait_for(lock, kPublishInterval);
      if (stop) break;
      ++record.heartbeat;
      const std::string value = EncodeProgress(record);
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

PeerProgress::PeerProgress(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
                           std::string host, std::string store_address)
    : state_(std::make_shared<State>()) {
  state_->store = std::move(store);
  state_->rank = rank;
  state_->world_size = world_size;
  // No spaces: the record is split on them.
  for (char& c : host) {
    if (c == ' ') c = '_';
  }
  state_->record.host = std::move(host);
  state_->store_address = std::move(store_address);
  // Posted before training starts, so the record names this rank's host
  // even when its link is cut before the first interval ends.
  try {
    const std::string value = EncodeProgress(state_->record);
    state_->store->set(KeyOf(rank), std::vector<uint8_t>(value.begin(), value.end()));
  } catch (const std::exception&) {
    // The store is already gone: the first collective will say so.
  }
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
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    first = state_->record.number == 0;
    ++state_->record.number;
    state_->record.collective = collective;
  }
  // Published at once the first time: a fast job can be cut off before
  // the first interval ends, and would then look as if it never started.
  if (first) state_->changed.notify_all();
}

std::string PeerProgress::DescribeLaggards(bool check_heartbeats,
                                           std::chrono::milliseconds deadline) {
  long long mine = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    mine = state_->record.number;
  }
  // Read on a thread of its own: if the store's host is stopped or cut off,
  // its reads block, and this rank must still report its error and exit.
  auto answer = std::make_shared<std::promise<std::string>>();
  std::future<std::string> text = answer->get_future();
  std::thread([state = state_, answer, mine, check_heartbeats] {
    try {
      const Records before = ReadRecords(*state->store, state->rank, state->world_size);
      if (!check_heartbeats) {
        answer->set_value(DescribeRecords(before, std::nullopt, mine));
        return;
      }
      std::this_thread::sleep_for(kSilence);
      const Records after = ReadRecords(*state->store, state->rank, state->world_size);
      answer->set_value(DescribeRecords(after, before, mine));
    } catch (const std::exception& error) {
      answer->set_value(absl::StrCat("; the store at ", state->store_address,
                                     " could not say where the other ranks are (", error.what(),
                                     ")"));
    }
  }).detach();
  if (text.wait_for(deadline) != std::future_status::ready) {
    return absl::StrCat("; the store at ", state_->store_address, " (rank 0's host) did not answer ",
                        "within ", deadline.count() / 1000.0,
                        " s: that host is unreachable from this one, or rank 0 is stopped");
  }
  return text.get();
}

}  // namespace pipeline
