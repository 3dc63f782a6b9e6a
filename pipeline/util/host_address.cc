#include "pipeline/util/host_address.h"

#include <netdb.h>
#include <sys/socket.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace pipeline {

std::string LoopbackIfLocalhost(absl::string_view host) {
  return absl::AsciiStrToLower(host) == "localhost" ? "127.0.0.1" : std::string(host);
}

absl::Status CheckHostResolves(const std::string& host, absl::string_view source) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int error = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (error == 0) {
    ::freeaddrinfo(found);
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "the rendezvous host \"", host, "\" (from ", source, ") does not resolve: ",
      ::gai_strerror(error),
      "; give the address or a name this machine resolves (/etc/hosts, DNS) of the machine "
      "that runs rank 0"));
}

}  // namespace pipeline
