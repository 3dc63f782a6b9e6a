#ifndef PLUGINS_STRATEGIES_DDP_RENDEZVOUS_H_
#define PLUGINS_STRATEGIES_DDP_RENDEZVOUS_H_

// Where a ddp rank is in its job, read from the variables its launcher set:
// torchrun's (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), else
// SLURM's (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, the first host of
// SLURM_JOB_NODELIST), else Open MPI's (OMPI_COMM_WORLD_*), so a run starts
// unchanged under `train`'s own launcher, torchrun, srun or mpirun.

#include <string>

#include "absl/status/statusor.h"
#include "pipeline/interfaces/strategy.h"

namespace pipeline {

struct Rendezvous {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr;
  // Where master_addr came from, for the error when it does not resolve.
  std::string master_addr_source;
  int master_port = 0;
  // This rank's machine as other ranks' errors name it.
  std::string host;
  // Which attempt of the job this is (TORCHELASTIC_RESTART_COUNT).
  int restart_count = 0;
  // torchrun's agent already serves a store at master_addr:master_port
  // (TORCHELASTIC_USE_AGENT_STORE=True): every rank joins it as a client,
  // under the prefix /worker/attempt_<restart_count>, as PyTorch's
  // _create_c10d_store does, instead of rank 0 serving one on that port.
  bool agent_store = false;
};

// The rendezvous of this rank from `context.environment`, checked: a rank
// below the world size, a TCP port, numbers where numbers belong.
absl::StatusOr<Rendezvous> ReadRendezvous(const StrategyContext& context);

}  // namespace pipeline

#endif  // PLUGINS_STRATEGIES_DDP_RENDEZVOUS_H_
