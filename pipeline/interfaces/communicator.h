#ifndef PIPELINE_INTERFACES_COMMUNICATOR_H_
#define PIPELINE_INTERFACES_COMMUNICATOR_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pipeline {

// Collectives over the processes of one job, for the decisions every rank
// must take alike (stop now, skip a step, resume from where, is the config
// the same) and for adding up metrics. Every rank calls the same collectives
// in the same order; a call that does not complete (a dead peer, a timeout)
// returns an error naming the collective and the ranks that did not come.
// Gradients do not go through here: the strategy synchronises them.
class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // Adds `values` element-wise across every rank, in place (in double:
  // integer counts below 2^53 stay exact). `what` names the collective in
  // errors ("the stop vote").
  virtual absl::Status AllReduceSum(std::vector<double>& values, const std::string& what) = 0;

  // Every rank's `bytes`, indexed by rank (lengths may differ).
  virtual absl::StatusOr<std::vector<std::string>> AllGather(const std::string& bytes,
                                                             const std::string& what) = 0;

  // Replaces `bytes` on every rank with rank `root`'s.
  virtual absl::Status Broadcast(std::string& bytes, int root, const std::string& what) = 0;

  // Returns once every rank has called it.
  virtual absl::Status Barrier(const std::string& what) = 0;
};

// One process: every collective is the identity.
class LocalCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  absl::Status AllReduceSum(std::vector<double>&, const std::string&) override {
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<std::string>> AllGather(const std::string& bytes,
                                                     const std::string&) override {
    return std::vector<std::string>{bytes};
  }
  absl::Status Broadcast(std::string&, int, const std::string&) override {
    return absl::OkStatus();
  }
  absl::Status Barrier(const std::string&) override { return absl::OkStatus(); }
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_COMMUNICATOR_H_
