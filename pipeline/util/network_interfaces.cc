#include "pipeline/util/network_interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace pipeline {
namespace {

// The address bytes of an IPv4 or IPv6 socket address ("" for others).
std::string AddressBytes(const sockaddr* address) {
  if (address == nullptr) return "";
  if (address->sa_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in*>(address)->sin_addr;
    return std::string(reinterpret_cast<const char*>(&in), sizeof(in));
  }
  if (address->sa_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
    return std::string(reinterpret_cast<const char*>(&in6), sizeof(in6));
  }
  return "";
}

bool IsLoopback(const sockaddr* address) {
  if (address->sa_family == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in*>(address)->sin_addr.s_addr) >> 24) == 127;
  }
  return address->sa_family == AF_INET6 &&
         IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr);
}

}  // namespace

std::vector<InterfaceAddress> ListInterfaceAddresses() {
  std::vector<InterfaceAddress> found;
  ifaddrs* addresses = nullptr;
  if (::getifaddrs(&addresses) != 0) return found;
  for (ifaddrs* a = addresses; a != nullptr; a = a->ifa_next) {
    const std::string bytes = AddressBytes(a->ifa_addr);
    if (bytes.empty()) continue;
    InterfaceAddress entry;
    entry.interface = a->ifa_name;
    entry.family = a->ifa_addr->sa_family;
    entry.bytes = bytes;
    entry.loopback = IsLoopback(a->ifa_addr);
    char text[INET6_ADDRSTRLEN] = {};
    if (::inet_ntop(entry.family, bytes.data(), text, sizeof(text)) != nullptr) entry.text = text;
    found.push_back(std::move(entry));
  }
  ::freeifaddrs(addresses);
  return found;
}

std::string AddressOfInterface(const std::string& interface) {
  for (const InterfaceAddress& address : ListInterfaceAddresses()) {
    if (address.interface == interface && !address.text.empty()) return address.text;
  }
  return "";
}

bool IsThisMachine(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* resolved = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &resolved) != 0) return false;
  const std::vector<InterfaceAddress> interfaces = ListInterfaceAddresses();
  bool local = false;
  for (addrinfo* a = resolved; a != nullptr && !local; a = a->ai_next) {
    const std::string wanted = AddressBytes(a->ai_addr);
    if (wanted.empty()) continue;
    local = IsLoopback(a->ai_addr);
    for (const InterfaceAddress& mine : interfaces) {
      local = local || (mine.family == a->ai_family && mine.bytes == wanted);
    }
  }
  ::freeaddrinfo(resolved);
  return local;
}

}  // namespace pipeline
