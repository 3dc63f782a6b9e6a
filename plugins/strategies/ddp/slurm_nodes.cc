#include "plugins/strategies/ddp/slurm_nodes.h"

namespace pipeline {

std::string FirstSlurmHost(const std::string& node_list) {
  const size_t bracket = node_list.find('[');
  const size_t comma = node_list.find(',');
  if (bracket == std::string::npos || (comma != std::string::npos && comma < bracket)) {
    return node_list.substr(0, comma);
  }
  // "prefix[first-last,...]": the prefix and the first number as written
  // (zero padding is part of the host name).
  const size_t end = node_list.find_first_of("-,]", bracket + 1);
  if (end == std::string::npos) return node_list.substr(0, bracket);
  return node_list.substr(0, bracket) + node_list.substr(bracket + 1, end - bracket - 1);
}

}  // namespace pipeline
