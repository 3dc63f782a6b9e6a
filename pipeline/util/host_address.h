#ifndef PIPELINE_UTIL_HOST_ADDRESS_H_
#define PIPELINE_UTIL_HOST_ADDRESS_H_

// The rendezvous host of a multi-process run, checked before anything waits
// on it: c10d's store retries a name that does not resolve once a second
// until its timeout (minutes), printing the resolver's complaint each time;
// the runner says at once which host and where it came from.

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace pipeline {

// "localhost" means loopback (RFC 6761), whatever /etc/hosts says or lacks;
// every other name is returned unchanged.
std::string LoopbackIfLocalhost(absl::string_view host);

// OK when `host` resolves to a TCP address; otherwise FailedPrecondition
// naming the host, `source` (the variable or flag it came from, e.g.
// "MASTER_ADDR") and the resolver's reason.
absl::Status CheckHostResolves(const std::string& host, absl::string_view source);

}  // namespace pipeline

#endif  // PIPELINE_UTIL_HOST_ADDRESS_H_
