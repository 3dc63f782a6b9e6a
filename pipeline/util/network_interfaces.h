#ifndef PIPELINE_UTIL_NETWORK_INTERFACES_H_
#define PIPELINE_UTIL_NETWORK_INTERFACES_H_

// This machine's IP addresses, one entry per (interface, address): what a
// rank names itself by (the address of GLOO_SOCKET_IFNAME) and how a
// launcher tells whether a rendezvous host is this machine.

#include <string>
#include <vector>

namespace pipeline {

struct InterfaceAddress {
  std::string interface;  // "eth0", "lo"
  int family = 0;         // AF_INET or AF_INET6
  std::string bytes;      // the address in network order: 4 or 16 bytes
  std::string text;       // "10.0.0.2", "fe80::1"
  bool loopback = false;  // 127.0.0.0/8 or ::1
};

// Every IPv4 and IPv6 address of every interface that is up or down
// (getifaddrs order); empty when the system will not list them.
std::vector<InterfaceAddress> ListInterfaceAddresses();

// The first address of `interface` in text, or "" when it has none.
std::string AddressOfInterface(const std::string& interface);

// Whether `host` (a name or an address) resolves to loopback or to an
// address of one of this machine's interfaces.
bool IsThisMachine(const std::string& host);

}  // namespace pipeline

#endif  // PIPELINE_UTIL_NETWORK_INTERFACES_H_
