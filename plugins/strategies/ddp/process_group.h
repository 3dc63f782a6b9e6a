#ifndef PLUGINS_STRATEGIES_DDP_PROCESS_GROUP_H_
#define PLUGINS_STRATEGIES_DDP_PROCESS_GROUP_H_

// The c10d group a ddp rank's collectives run over. The ranks meet at a
// TCPStore that rank 0 serves at MASTER_ADDR:MASTER_PORT; each checks that
// the store belongs to its own attempt of the job and that every rank agrees
// on the world size and holds its own rank, so a rank launched wrongly is
// refused at once rather than found by the timeout. Then a Gloo group, or an
// NCCL group in a CUDA build with backend: NCCL.

#include "absl/status/statusor.h"
#include "pipeline/interfaces/strategy.h"
#include "pipeline/util/c10d_compat.h"
#include "plugins/strategies/ddp/ddp.pb.h"
#include "plugins/strategies/ddp/rendezvous.h"
#include "torch/types.h"

namespace pipeline {

struct ProcessGroup {
  c10::intrusive_ptr<CollectiveGroup> group;
  // Where the ranks met; PeerProgress publishes each rank's progress there.
  c10::intrusive_ptr<c10d::Store> store;
};

// Meets the other ranks of `rendezvous`, waiting at most
// options.timeout_seconds for them. `device` is where NCCL's collectives run
// (Gloo's run on the CPU). The error names the rendezvous, and for a port
// that another process holds, says to choose a free MASTER_PORT.
absl::StatusOr<ProcessGroup> ConnectProcessGroup(const DdpOptions& options,
                                                 const StrategyContext& context,
                                                 const Rendezvous& rendezvous,
                                                 torch::Device device);

// Ends an NCCL group's communicators (nothing for Gloo): called once every
// collective of the run was waited for, before the group is destroyed.
void AbortNcclGroup(CollectiveGroup& group);

}  // namespace pipeline

#endif  // PLUGINS_STRATEGIES_DDP_PROCESS_GROUP_H_
