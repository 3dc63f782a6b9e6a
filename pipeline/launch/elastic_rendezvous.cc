#include "pipeline/launch/elastic_rendezvous.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "pipeline/util/c10d_compat.h"
#include "pipeline/util/host_address.h"
#include "pipeline/util/network_interfaces.h"
#include "pipeline/launch/launcher.h"

namespace pipeline {
namespace {

constexpr std::chrono::milliseconds kPoll{100};
// The longest one store operation may take once connected; the waits of the
// rendezvous are polls, each far shorter.
constexpr std::chrono::seconds kOperationTimeout{60};

// The store's keys. Round r's: guests (a counter: each guest's join number
// is its node rank), nnodes and port (set by the host when it forms the
// round; nnodes last, as the commit).
constexpr char kRound[] = "elastic/round";
constexpr char kConfig[] = "elastic/config";
constexpr char kNprocPerNode[] = "elastic/nproc_per_node";
constexpr char kDone[] = "elastic/done";
constexpr char kWaiting[] = "elastic/waiting";
std::string RoundKey(int round, absl::string_view what) {
  return absl::StrCat("elastic/round/", round, "/", what);
}

std::vector<uint8_t> Bytes(absl::string_view text) { return {text.begin(), text.end()}; }
std::string Text(const std::vector<uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }

c10d::TCPStoreOptions StoreOptions(int port, bool server, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(port);
  options.isServer = server;
  options.waitWorkers = false;
  options.timeout = timeout;
  UseClassicStoreBackend(options);
  return options;
}

std::string Where(const RendezvousOptions& options) {
  return absl::StrCat(options.host, ":", options.port);
}

// A store call failed: the host is gone (or never answered).
absl::Status HostLost(const RendezvousOptions& options, const std::exception& error) {
  return absl::UnavailableError(absl::StrCat("the elastic rendezvous at ", Where(options),
                                             " stopped answering (its host, the launcher on "
                                             "--master_addr, has ended): ",
                                             error.what()));
}

}  // namespace

absl::StatusOr<NodeRange> ParseNodeRange(absl::string_view flag) {
  NodeRange range;
  const std::vector<std::string> parts = absl::StrSplit(flag, ':');
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--nnodes=", flag, ": ", why, "; give a node count (--nnodes=2) or an elastic range "
        "MIN:MAX with 1 <= MIN <= MAX (--nnodes=1:4)"));
  };
  if (parts.size() > 2) return bad("more than one ':'");
  if (!absl::SimpleAtoi(parts[0], &range.min) ||
      (parts.size() == 2 && !absl::SimpleAtoi(parts[1], &range.max))) {
    return bad("not a number");
  }
  if (parts.size() == 1) range.max = range.min;
  range.elastic = parts.size() == 2;
  if (range.min < 1) return bad(absl::StrCat("MIN is ", range.min, ", at least 1 node is needed"));
  if (range.max < range.min) {
    return bad(absl::StrCat("MIN (", range.min, ") is larger than MAX (", range.max, ")"));
  }
  return range;
}

ElasticRendezvous::ElasticRendezvous(const RendezvousOptions& options, bool is_host)
    : options_(options), is_host_(is_host) {}

ElasticRendezvous::~ElasticRendezvous() = default;

absl::StatusOr<std::unique_ptr<ElasticRendezvous>> ElasticRendezvous::Connect(
    const RendezvousOptions& options) {
  std::unique_ptr<ElasticRendezvous> rendezvous(new ElasticRendezvous(options, false));
  const std::string host = LoopbackIfLocalhost(options.host);
  if (IsThisMachine(host)) {
    try {
      rendezvous->store_ = c10::make_intrusive<c10d::TCPStore>(
          host, StoreOptions(options.port, true, kOperationTimeout));
      rendezvous->is_host_ = true;
    } catch (const std::exception& error) {
      // Another launcher on this machine hosts it: join as a guest.
      if (!absl::StrContains(error.what(), "Address already in use")) {
        return absl::FailedPreconditionError(absl::StrCat(
            "cannot host the elastic rendezvous on port ", options.port, ": ", error.what()));
      }
    }
  }
  try {
    if (rendezvous->is_host_) {
      rendezvous->store_->set(kRound, Bytes("0"));
      rendezvous->store_->set(kConfig, Bytes(options.config_text));
      rendezvous->store_->set(kNprocPerNode, Bytes(std::to_string(options.nproc_per_node)));
      std::cerr << "launcher: hosting the elastic rendezvous at " << Where(options) << " ("
                << options.nodes.min << " to " << options.nodes.max << " nodes)\n";
    } else {
      std::cerr << "launcher: joining the elastic rendezvous at " << Where(options)
                << " (waiting up to " << options.join_timeout.count() / 1000
                << " s for its host)\n";
      rendezvous->store_ = c10::make_intrusive<c10d::TCPStore>(
          host, StoreOptions(options.port, false, options.join_timeout));
      rendezvous->store_->setTimeout(kOperationTimeout);
    }
  } catch (const std::exception& error) {
    return absl::UnavailableError(absl::StrCat(
        "no elastic rendezvous answered at ", Where(options), " within ",
        options.join_timeout.count() / 1000, " s (the launcher on --master_addr hosts it): ",
        error.what()));
  }
  return rendezvous;
}

absl::Status ElasticRendezvous::CheckSameJob() {
  const std::string config = Text(store_->get(kConfig));
  const std::string nproc = Text(store_->get(kNprocPerNode));
  if (nproc != std::to_string(options_.nproc_per_node)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "this node runs ", options_.nproc_per_node, " workers and the rendezvous host ", nproc,
        "; an elastic job's nodes run the same number (--nproc_per_node); this node did not "
        "join"));
  }
  if (config != options_.config_text) {
    return absl::InvalidArgumentError(
        "this node's resolved config differs from the rendezvous host's; start every node with "
        "the same config file and --set flags (compare with `train --print_config`); this node "
        "did not join, the job goes on without it");
  }
  return absl::OkStatus();
}

absl::StatusOr<int> ElasticRendezvous::CurrentRound() {
  try {
    int round = 0;
    absl::SimpleAtoi(Text(store_->get(kRound)), &round);
    return round;
  } catch (const std::exception& error) {
    return HostLost(options_, error);
  }
}

absl::Status ElasticRendezvous::OpenNextRound(int round) {
  try {
    store_->compareSet(kRound, Bytes(std::to_string(round)), Bytes(std::to_string(round + 1)));
    return absl::OkStatus();
  } catch (const std::exception& error) {
    return HostLost(options_, error);
  }
}

absl::StatusOr<RoundMembership> ElasticRendezvous::FormRound(int round) {
  const auto give_up = std::chrono::steady_clock::now() + options_.join_timeout;
  int joined = 0;
  std::chrono::steady_clock::time_point last_call_ends;
  while (true) {
    const int now_joined = 1 + static_cast<int>(store_->add(RoundKey(round, "guests"), 0));
    const auto now = std::chrono::steady_clock::now();
    if (now_joined > joined) {
      joined = now_joined;
      last_call_ends = now + options_.last_call;
    }
    if (joined >= options_.nodes.max || (joined >= options_.nodes.min && now >= last_call_ends)) {
      break;
    }
    if (joined < options_.nodes.min && now >= give_up) {
      return absl::DeadlineExceededError(absl::StrCat(
          "rendezvous round ", round, ": ", joined, " of at least ", options_.nodes.min,
          " nodes joined within ", options_.join_timeout.count() / 1000,
          " s (--rdzv_join_timeout); start the others with the same --master_addr and "
          "--master_port"));
    }
    std::this_thread::sleep_for(kPoll);
  }
  const int nnodes = std::min(joined, options_.nodes.max);
  auto port = FreePort();
  if (!port.ok()) return port.status();
  store_->set(RoundKey(round, "port"), Bytes(std::to_string(*port)));
  store_->set(RoundKey(round, "nnodes"), Bytes(std::to_string(nnodes)));
  return RoundMembership{round, nnodes, 0, *port};
}

absl::StatusOr<RoundMembership> ElasticRendezvous::JoinOpenRound(int round, bool* late) {
  *late = store_->check({RoundKey(round, "nnodes")});
  if (*late) return RoundMembership{};
  const int node_rank = static_cast<int>(store_->add(RoundKey(round, "guests"), 1));
  const auto give_up = std::chrono::steady_clock::now() + options_.join_timeout;
  while (!store_->check({RoundKey(round, "nnodes")})) {
    if (store_->check({kDone})) return absl::NotFoundError("the job has finished");
    if (std::chrono::steady_clock::now() >= give_up) {
      return absl::DeadlineExceededError(absl::StrCat(
          "rendezvous round ", round, " did not form within ", options_.join_timeout.count() / 1000,
          " s (--rdzv_join_timeout): fewer than ", options_.nodes.min,
          " nodes joined, or the host's launcher is not running"));
    }
    std::this_thread::sleep_for(kPoll);
  }
  int nnodes = 0, port = 0;
  absl::SimpleAtoi(Text(store_->get(RoundKey(round, "nnodes"))), &nnodes);
  absl::SimpleAtoi(Text(store_->get(RoundKey(round, "port"))), &port);
  *late = node_rank >= nnodes;
  return RoundMembership{round, nnodes, node_rank, port};
}

absl::Status ElasticRendezvous::WaitForNextRound(int round) {
  while (true) {
    if (store_->check({kDone})) return absl::NotFoundError("the job has finished");
    int current = 0;
    absl::SimpleAtoi(Text(store_->get(kRound)), &current);
    if (current > round) return absl::OkStatus();
    std::this_thread::sleep_for(kPoll);
  }
}

absl::StatusOr<RoundMembership> ElasticRendezvous::JoinRound(int first_round) {
  try {
    if (is_host_) return JoinRoundAsHost(first_round);
    if (absl::Status same = CheckSameJob(); !same.ok()) return same;
    // Counted while it waits, so that a host whose job ends tells it so
    // before going away (MarkJobDone).
    store_->add(kWaiting, 1);
    auto membership = JoinRoundAsGuest(first_round);
    store_->add(kWaiting, -1);
    return membership;
  } catch (const std::exception& error) {
    return HostLost(options_, error);
  }
}

absl::StatusOr<RoundMembership> ElasticRendezvous::JoinRoundAsHost(int first_round) {
  while (true) {
    int round = 0;
    absl::SimpleAtoi(Text(store_->get(kRound)), &round);
    round = std::max(round, first_round);
    // Formed already (by this host, whose workers then ended without anyone
    // opening the next round): open the next.
    if (store_->check({RoundKey(round, "nnodes")})) {
      store_->compareSet(kRound, Bytes(std::to_string(round)), Bytes(std::to_string(round + 1)));
      continue;
    }
    store_->set(kRound, Bytes(std::to_string(round)));
    return FormRound(round);
  }
}

absl::StatusOr<RoundMembership> ElasticRendezvous::JoinRoundAsGuest(int first_round) {
  bool said_late = false;
  while (true) {
    if (store_->check({kDone})) return absl::NotFoundError("the job has finished");
    int round = 0;
    absl::SimpleAtoi(Text(store_->get(kRound)), &round);
    if (round < first_round) {
      if (absl::Status next = WaitForNextRound(round); !next.ok()) return next;
      continue;
    }
    bool late = false;
    auto membership = JoinOpenRound(round, &late);
    if (!membership.ok() || !late) return membership;
    if (!said_late) {
      std::cerr << "launcher: rendezvous round " << round << " formed without this node; it "
                << "joins when the job next restarts\n";
      said_late = true;
    }
    if (absl::Status next = WaitForNextRound(round); !next.ok()) return next;
  }
}
void ElasticRendezvous::MarkJobDone() {
  try {
    store_->set(kDone, Bytes("1"));
    // A node waiting to join polls every kPoll; give each a moment to read
    // "done" before this process, and the store, ends.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (store_->add(kWaiting, 0) > 0 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(kPoll);
    }
  } catch (const std::exception&) {
    // Nobody is left to tell.
  }
}

}  // namespace pipeline
