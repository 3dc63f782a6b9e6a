#include "plugins/strategies/ddp/rendezvous.h"

#include <unistd.h>

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "pipeline/util/host_address.h"
#include "pipeline/util/network_interfaces.h"
#include "pipeline/util/status_macros.h"
#include "plugins/strategies/ddp/slurm_nodes.h"

namespace pipeline {
namespace {


std::string HostOfThisRank(const StrategyContext& context) {
  const std::string interface = context.environment("GLOO_SOCKET_IFNAME");
  if (!interface.empty()) {
    // What the other ranks reach this one at.
    const std::string address = AddressOfInterface(interface);
    if (!address.empty()) return address;
  }
  char name[256] = {};
  return ::gethostname(name, sizeof(name) - 1) == 0 ? std::string(name) : "unknown host";
}

// The first of `names` that is set: torchrun's variable, then SLURM's, then
// Open MPI's, so a run starts unchanged under any of them.
absl::StatusOr<int> IntFromEnvironment(const StrategyContext& context,
                                       const std::vector<std::string>& names, bool required,
                                       int fallback) {
  for (const std::string& name : names) {
    const std::string value = context.environment(name);
    if (value.empty()) continue;
    int parsed = 0;
    if (!absl::SimpleAtoi(value, &parsed) || parsed < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("environment variable ", name, "=\"", value, "\" is not a number >= 0"));
    }
    return parsed;
  }
  if (!required) return fallback;
  return absl::FailedPreconditionError(absl::StrCat(
      "environment variable ", names[0], " is not set; start ddp runs with `train` itself "
      "(it launches nproc_per_node workers), torchrun, srun or mpirun"));
}

}  // namespace

absl::StatusOr<Rendezvous> ReadRendezvous(const StrategyContext& context) {
  Rendezvous r;
  ASSIGN_OR_RETURN(r.rank, IntFromEnvironment(context, {"RANK", "SLURM_PROCID",
                                                        "OMPI_COMM_WORLD_RANK"},
                                              true, 0));
  ASSIGN_OR_RETURN(r.world_size,
                   IntFromEnvironment(context, {"WORLD_SIZE", "SLURM_NTASKS",
                                                "OMPI_COMM_WORLD_SIZE"},
                                      true, 0));
  ASSIGN_OR_RETURN(r.local_rank,
                   IntFromEnvironment(context, {"LOCAL_RANK", "SLURM_LOCALID",
                                                "OMPI_COMM_WORLD_LOCAL_RANK"},
                                      false, r.rank));
  ASSIGN_OR_RETURN(r.master_port, IntFromEnvironment(context, {"MASTER_PORT"}, false, 29500));
  r.master_addr = context.environment("MASTER_ADDR");
  r.master_addr_source = "MASTER_ADDR";
  if (r.master_addr.empty()) {
    // Under SLURM, rank 0 runs on the first host of the job.
    r.master_addr = FirstSlurmHost(context.environment("SLURM_JOB_NODELIST"));
    r.master_addr_source = absl::StrCat("the first host of SLURM_JOB_NODELIST=",
                                        context.environment("SLURM_JOB_NODELIST"));
  }
  if (r.master_addr.empty()) {
    r.master_addr = "127.0.0.1";
    r.master_addr_source = "the default, as neither MASTER_ADDR nor SLURM_JOB_NODELIST is set";
  }
  r.master_addr = LoopbackIfLocalhost(r.master_addr);
  r.host = HostOfThisRank(context);
  ASSIGN_OR_RETURN(r.restart_count,
                   IntFromEnvironment(context, {"TORCHELASTIC_RESTART_COUNT"}, false, 0));
  r.agent_store = context.environment("TORCHELASTIC_USE_AGENT_STORE") == "True";
  if (r.world_size < 1 || r.rank >= r.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("RANK=", r.rank, " WORLD_SIZE=", r.world_size,
                                                   ": the rank must be below the world size"));
  }
  if (r.master_port < 1 || r.master_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("MASTER_PORT=", r.master_port, " is not a TCP port (1-65535)"));
  }
  return r;
}

}  // namespace pipeline
