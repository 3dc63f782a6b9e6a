#ifndef PIPELINE_TESTING_TEST_NETWORK_H_
#define PIPELINE_TESTING_TEST_NETWORK_H_

// Several hosts on one IP network, made of Linux network namespaces on this
// machine, for tests that run a multi-machine job over a real network path
// and break it: cut a host's link, slow it down, lose packets.
//
//   switch namespace:  bridge br0, ports p0 .. pN-1
//   host i namespace:  eth0 (the other end of p<i>), 10.213.0.<i+1>/24, lo
//
// Traffic between hosts crosses two veth pairs and the bridge, as between
// machines on one switch; inside a host, loopback. Every address and
// interface lives inside the namespaces, so nothing on the machine itself
// changes and two tests (or two copies of the suite) running at once cannot
// collide on an address or a port; only the namespace names are global, and
// they carry the process id. Needs root and iproute2 (`ip`, `tc`); the
// degraded link needs nftables where the kernel has no netem
// (tools/setup.sh installs both).

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pipeline {
namespace testing {

class TestNetwork {
 public:
  // Creates `hosts` hosts on one switch. An Unavailable error says why
  // namespaces cannot be made here (not root, no `ip`, a kernel or a
  // container that refuses them), for the test to skip with; any other error
  // is a failure. Namespaces left by a crashed earlier run of a test using
  // this class (its process gone) are removed first.
  static absl::StatusOr<std::unique_ptr<TestNetwork>> Create(int hosts);

  // Removes every namespace, and with them every link and address. Stop the
  // processes running in them first: a namespace lives on (unnamed) while a
  // process is inside.
  ~TestNetwork();
  TestNetwork(const TestNetwork&) = delete;
  TestNetwork& operator=(const TestNetwork&) = delete;

  int hosts() const { return static_cast<int>(hosts_.size()); }
  const std::string& HostNamespace(int host) const { return hosts_[host]; }
  // The host's address, "10.213.0.1" for host 0.
  std::string Address(int host) const;
  // An address on the hosts' subnet that no host has.
  std::string UnusedAddress() const;
  // Every host's link is called this inside its namespace.
  static std::string Interface() { return "eth0"; }

  // `argv` run on `host`: `ip netns exec <namespace>` in front of it, for
  // BackgroundProcess (argv[0] must be a path, as for execv).
  std::vector<std::string> OnHost(int host, const std::vector<std::string>& argv) const;
  // Runs a shell command line inside the host's namespace and returns what
  // it printed; an error holds that too.
  absl::StatusOr<std::string> RunOnHost(int host, const std::string& command) const;

  // Sets the host's port on the switch down or up again: the host's cable
  // pulled and plugged back in. Its own configuration stays as it was.
  absl::Status SetLinkUp(int host, bool up) const;

  // Makes the host's outgoing traffic lossy and slow: netem (delay 20ms,
  // loss 1%) where the kernel has it, else 1% random loss by an nftables
  // rule plus a tbf bandwidth cap of 1 Mbit/s. Says which was applied.
  absl::StatusOr<std::string> DegradeLink(int host) const;

 private:
  TestNetwork() = default;
  absl::StatusOr<std::string> Run(const std::string& command) const;

  std::string ip_;  // the path of iproute2's `ip`
  std::string switch_;
  std::vector<std::string> hosts_;
  std::vector<std::string> created_;  // namespaces to remove, in creation order
};

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_TEST_NETWORK_H_
