#include "pipeline/testing/test_network.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <regex>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "pipeline/testing/command.h"

namespace pipeline {
namespace testing {
namespace {

constexpr char kNamespaceFolder[] = "/run/netns";

// Namespaces are named mh<pid>-<n>s (the switch) and mh<pid>-<n>h<i> (host
// i) for the n-th network of process <pid>: at most 15 characters, like an
// interface name, so they read well in `ip netns list`.
const std::regex& NamePattern() {
  static const std::regex pattern("mh([0-9]+)-[0-9]+(s|h[0-9]+)");
  return pattern;
}

std::string FindIp() {
  for (const char* path : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

// A crashed run cannot clean up after itself: its namespaces stay until
// removed. Those whose process is gone are.
void RemoveStaleNamespaces(const std::string& ip) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(kNamespaceFolder, error)) {
    const std::string name = entry.path().filename().string();
    std::smatch match;
    if (!std::regex_match(name, match, NamePattern())) continue;
    const long pid = std::stol(match[1]);
    if (pid == ::getpid()) continue;  // this process's own: see Create
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      RunCommand(absl::StrCat(ip, " netns del ", name));
    }
  }
}

}  // namespace

absl::StatusOr<std::string> TestNetwork::Run(const std::string& command) const {
  // A test's PATH (Bazel's) may leave out the sbin folders, where tc and
  // nft are.
  const CommandResult result =
      RunCommand("PATH=/usr/local/sbin:/usr/sbin:/sbin:$PATH; " + command);
  if (result.exit_code != 0) {
    return absl::InternalError(absl::StrCat("`", command, "` exited with status ",
                                            result.exit_code, ": ", result.output));
  }
  return result.output;
}

absl::StatusOr<std::unique_ptr<TestNetwork>> TestNetwork::Create(int hosts) {
  if (::geteuid() != 0) {
    return absl::UnavailableError("network namespaces need root, and this runs as uid " +
                                  std::to_string(::geteuid()));
  }
  const std::string ip = FindIp();
  if (ip.empty()) {
    return absl::UnavailableError("no `ip` command (Debian package iproute2; tools/setup.sh)");
  }
  RemoveStaleNamespaces(ip);
  static std::atomic<int> networks{0};
  const std::string prefix = absl::StrCat("mh", ::getpid(), "-", networks++);
  std::unique_ptr<TestNetwork> network(new TestNetwork());
  network->ip_ = ip;
  network->switch_ = prefix + "s";
  for (int i = 0; i < hosts; ++i) network->hosts_.push_back(absl::StrCat(prefix, "h", i));

  std::vector<std::string> names = {network->switch_};
  names.insert(names.end(), network->hosts_.begin(), network->hosts_.end());
  for (const std::string& name : names) {
    // Left by an earlier process that had this one's id and crashed.
    if (std::filesystem::exists(std::string(kNamespaceFolder) + "/" + name)) {
      RunCommand(absl::StrCat(ip, " netns del ", name));
    }
    const CommandResult added = RunCommand(absl::StrCat(ip, " netns add ", name));
    if (added.exit_code != 0) {
      // Nothing else has been tried: this machine (a container, say) does
      // not allow namespaces, which is a reason to skip, not a failure.
      if (network->created_.empty()) {
        return absl::UnavailableError(
            absl::StrCat("cannot create a network namespace (`ip netns add ", name,
                         "`): ", added.output));
      }
      return absl::InternalError(absl::StrCat("`ip netns add ", name, "`: ", added.output));
    }
    network->created_.push_back(name);
  }
  const std::string on_switch = absl::StrCat(ip, " -n ", network->switch_, " ");
  // Made is not yet usable: `ip -n` remounts / as a slave, which fails where
  // / is no mount point (a plain chroot): a reason to skip, too.
  const CommandResult entered = RunCommand(on_switch + "link set lo up");
  if (entered.exit_code != 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot enter a network namespace (`ip -n ", network->switch_, " link set lo up`): ",
        entered.output, " (a chroot whose / is not a mount point, say)"));
  }
  absl::Status status = network->Run(on_switch + "link add br0 type bridge").status();
  if (status.ok()) status = network->Run(on_switch + "link set br0 up").status();
  for (int i = 0; i < hosts && status.ok(); ++i) {
    const std::string port = absl::StrCat("p", i);
    const std::string on_host = absl::StrCat(ip, " -n ", network->hosts_[i], " ");
    for (const std::string& command :
         {absl::StrCat(on_switch, "link add ", port, " type veth peer name ", Interface(),
                       " netns ", network->hosts_[i]),
          absl::StrCat(on_switch, "link set ", port, " master br0"),
          absl::StrCat(on_switch, "link set ", port, " up"),
          absl::StrCat(on_host, "addr add ", network->Address(i), "/24 dev ", Interface()),
          absl::StrCat(on_host, "link set ", Interface(), " up"),
          absl::StrCat(on_host, "link set lo up")}) {
      status = network->Run(command).status();
      if (!status.ok()) break;
    }
  }
  if (!status.ok()) return status;  // the destructor removes what was made
  return network;
}

TestNetwork::~TestNetwork() {
  // Hosts first: removing a namespace removes its end of each veth pair,
  // and with it the other end.
  for (auto name = created_.rbegin(); name != created_.rend(); ++name) {
    RunCommand(absl::StrCat(ip_, " netns del ", *name));
  }
}

std::string TestNetwork::Address(int host) const { return absl::StrCat("10.213.0.", host + 1); }

std::string TestNetwork::UnusedAddress() const { return "10.213.0.250"; }

std::vector<std::string> TestNetwork::OnHost(int host, const std::vector<std::string>& argv) const {
  std::vector<std::string> command = {ip_, "netns", "exec", hosts_[host]};
  command.insert(command.end(), argv.begin(), argv.end());
  return command;
}

absl::StatusOr<std::string> TestNetwork::RunOnHost(int host, const std::string& command) const {
  return Run(absl::StrCat(ip_, " netns exec ", hosts_[host], " ", command));
}

absl::Status TestNetwork::SetLinkUp(int host, bool up) const {
  return Run(absl::StrCat(ip_, " -n ", switch_, " link set p", host, up ? " up" : " down"))
      .status();
}

absl::StatusOr<std::string> TestNetwork::DegradeLink(int host) const {
  const std::string netem = "netem delay 20ms loss 1%";
  if (RunOnHost(host, absl::StrCat("tc qdisc add dev ", Interface(), " root ", netem)).ok()) {
    return netem;
  }
  // No sch_netem in this kernel ("Specified qdisc kind is unknown"): the
  // loss from nftables (one command line: the table, its output chain and
  // the rule), the slowness from a token bucket.
  if (!Run("command -v nft").ok()) {
    return absl::UnavailableError(
        "this kernel has no netem, and nft is not installed (Debian package nftables; "
        "tools/setup.sh installs it)");
  }
  if (absl::Status status =
          RunOnHost(host,
                    absl::StrCat("nft 'add table inet degrade { chain out { type filter hook "
                                 "output priority 0; policy accept; oifname \"",
                                 Interface(), "\" numgen random mod 100 < 1 counter drop; }; }'"))
              .status();
      !status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat("no netem in this kernel, and the nftables rule failed: ",
                                     status.message()));
  }
  const std::string tbf = "tbf rate 1mbit burst 32kbit latency 400ms";
  if (absl::Status status =
          RunOnHost(host, absl::StrCat("tc qdisc add dev ", Interface(), " root ", tbf)).status();
      !status.ok()) {
    return status;
  }
  return absl::StrCat("nftables: 1% random loss; tc ", tbf, " (this kernel has no netem)");
}

}  // namespace testing
}  // namespace pipeline
