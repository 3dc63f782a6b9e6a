#ifndef PIPELINE_LAUNCH_ELASTIC_LAUNCH_H_
#define PIPELINE_LAUNCH_ELASTIC_LAUNCH_H_

// This node's part of an elastic job (train --nnodes=MIN:MAX), as torchrun
// runs it: meet the other nodes' launchers in a rendezvous round, run this
// node's workers as the round's ranks, and when a worker of any node fails
// (within max_restarts), meet again with whoever is left, at least MIN
// nodes, and continue from the latest checkpoint. The workers re-shard the
// interrupted epoch for the new world size, so no sample of it is seen
// twice or skipped. A node that arrives while the job runs joins at its
// next restart.

#include "absl/status/status.h"
#include "pipeline/launch/elastic_rendezvous.h"
#include "pipeline/launch/launcher.h"

namespace pipeline {

// OK when the job finished (also when it finished while this node waited to
// join); otherwise the error that ended it here. `launch` gives the workers'
// command and nproc_per_node; each round sets the rest.
absl::Status LaunchElastic(const RendezvousOptions& rendezvous, LaunchOptions launch,
                           int max_restarts);

}  // namespace pipeline

#endif  // PIPELINE_LAUNCH_ELASTIC_LAUNCH_H_
