#ifndef PIPELINE_TESTING_STRATEGY_CONFORMANCE_H_
#define PIPELINE_TESTING_STRATEGY_CONFORMANCE_H_

// What every strategy plugin must do, checked against the `single` strategy
// and against plain LibTorch, on a small two-layer model and a batch of 8:
//
//  - one ForwardBackward + Step over the whole batch (each of P processes
//    taking its contiguous 1/P of it) leaves the parameters single leaves,
//    within 1e-5, on every rank; its StepOutput is detached, on the CPU, and
//    the logits are single's rows for the rank's samples;
//  - gradient accumulation: SetGradientSynchronization(false) for k-1
//    micro-batches, then true, equals one step on their concatenation;
//  - Forward gives single's logits;
//  - communicator(): rank and world size as launched, AllReduceSum,
//    AllGather of different lengths, Broadcast from any root and Barrier
//    give the right results on every rank.
//
// Several processes are simulated by threads of the test process, each with
// its own environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// MASTER_ADDR=127.0.0.1, MASTER_PORT: a free port) in StrategyContext.
//
//   load("//pipeline/testing:conformance.bzl", "strategy_conformance_test")
//   strategy_conformance_test(
//       name = "conformance_test",
//       plugin = ":ddp",
//       options = "timeout_seconds: 60",
//       processes = 2,
//   )

#include <ostream>
#include <string>

#include "gtest/gtest.h"

namespace pipeline {
namespace testing {

struct StrategyConformanceParams {
  std::string plugin;   // its registered name
  std::string options;  // the body of its options message, text format
  int processes = 1;    // how many processes it runs as (each a thread here)
};

void PrintTo(const StrategyConformanceParams& params, std::ostream* out);

class StrategyConformanceTest : public ::testing::TestWithParam<StrategyConformanceParams> {};

std::string StrategyConformanceTestName(
    const ::testing::TestParamInfo<StrategyConformanceParams>& info);

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_STRATEGY_CONFORMANCE_H_
