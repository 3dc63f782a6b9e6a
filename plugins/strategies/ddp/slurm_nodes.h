#ifndef PLUGINS_STRATEGIES_DDP_SLURM_NODES_H_
#define PLUGINS_STRATEGIES_DDP_SLURM_NODES_H_

#include <string>

namespace pipeline {

// The first host of a SLURM node list (SLURM_JOB_NODELIST), where rank 0
// runs: "gpu[03-05,09],cpu1" -> "gpu03", "a,b" -> "a". "" for an empty list.
std::string FirstSlurmHost(const std::string& node_list);

}  // namespace pipeline

#endif  // PLUGINS_STRATEGIES_DDP_SLURM_NODES_H_
