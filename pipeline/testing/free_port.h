#ifndef PIPELINE_TESTING_FREE_PORT_H_
#define PIPELINE_TESTING_FREE_PORT_H_

// A loopback TCP port nothing listens on right now, for tests that start a
// rendezvous (it may be taken again before use; the OS rarely reuses one
// this soon).

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace pipeline {
namespace testing {

inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_FREE_PORT_H_
