#include "pipeline/util/network_interfaces.h"

#include <sys/socket.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace pipeline {
namespace {

// Every Linux machine (and network namespace) has lo, with 127.0.0.1 once
// it is up; a namespace the test runs in may leave it down, so only what
// getifaddrs lists is checked against itself.
TEST(NetworkInterfacesTest, EveryListedAddressIsItsInterfacesAndThisMachines) {
  for (const InterfaceAddress& address : ListInterfaceAddresses()) {
    EXPECT_TRUE(address.family == AF_INET || address.family == AF_INET6);
    EXPECT_EQ(address.bytes.size(), address.family == AF_INET ? 4u : 16u);
    ASSERT_FALSE(address.text.empty());
    if (address.text.find('%') != std::string::npos) continue;  // scoped IPv6
    EXPECT_TRUE(IsThisMachine(address.text)) << address.interface << " " << address.text;
    EXPECT_FALSE(AddressOfInterface(address.interface).empty()) << address.interface;
  }
}

TEST(NetworkInterfacesTest, LoopbackIsThisMachineAndOthersAreNot) {
  EXPECT_TRUE(IsThisMachine("127.0.0.1"));
  EXPECT_TRUE(IsThisMachine("127.3.4.5"));
  EXPECT_TRUE(IsThisMachine("::1"));
  // TEST-NET-1 (RFC 5737): never assigned to a machine.
  EXPECT_FALSE(IsThisMachine("192.0.2.123"));
  EXPECT_FALSE(IsThisMachine("no-such-host.invalid"));
}

TEST(NetworkInterfacesTest, AnInterfaceThatDoesNotExistHasNoAddress) {
  EXPECT_EQ(AddressOfInterface("no-such-interface0"), "");
}

}  // namespace
}  // namespace pipeline
