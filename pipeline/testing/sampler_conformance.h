#ifndef PIPELINE_TESTING_SAMPLER_CONFORMANCE_H_
#define PIPELINE_TESTING_SAMPLER_CONFORMANCE_H_

// What every sampler plugin must do, for datasets of 0, 1, 2, 5, 7, 13 and 31
// samples, in worlds of 1, 2 and 3 ranks (one instance per rank, built with
// SamplerContext{seed, rank, world_size}), over several epochs:
//
//  - EpochIndices and RemainingEpochIndices give indices in [0, size) only;
//  - the order depends only on the context, the size and the epoch: a second
//    instance with the same context, asked for the epochs in another order,
//    gives the same indices;
//  - every rank of a world gets equally many samples (so they take equally
//    many steps), of an epoch and of the rest of one;
//  - together the ranks cover the epoch. A sampler that gives every rank
//    the whole epoch (shards = false) gives each a permutation of all
//    indices. One that shares it between the ranks (shards = true) deals
//    each index to exactly one rank, except, as torch's DistributedSampler,
//    that fewer than world_size are repeated to pad the shards to one length
//    (the padding wrapping round to the start of the dealt order: the ranks'
//    samples interleaved, rank r's k-th at k * world_size + r) or left out
//    to drop them to one;
//  - resumed with the same world size after k samples per rank,
//    RemainingEpochIndices is, on every rank, EpochIndices without its first
//    k;
//  - resumed with another world size, the new ranks visit exactly the
//    samples that no rank of the old world had taken: each new rank all of
//    them (shards = false), or together each once (shards = true), padded or
//    dropped as the sampler pads or drops a whole epoch.
//
//   load("//pipeline/testing:conformance.bzl", "sampler_conformance_test")
//   sampler_conformance_test(
//       name = "conformance_test",
//       plugin = ":distributed",
//       options = ["", "drop_last: true"],
//       shards = True,
//   )

#include <ostream>
#include <string>

#include "gtest/gtest.h"

namespace pipeline {
namespace testing {

struct SamplerConformanceParams {
  std::string plugin;   // its registered name
  std::string options;  // the body of its options message, text format
  // Whether the ranks of a world share an epoch between them (true), or each
  // gets all of it (false).
  bool shards = false;
};

void PrintTo(const SamplerConformanceParams& params, std::ostream* out);

class SamplerConformanceTest : public ::testing::TestWithParam<SamplerConformanceParams> {};

std::string SamplerConformanceTestName(
    const ::testing::TestParamInfo<SamplerConformanceParams>& info);

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_SAMPLER_CONFORMANCE_H_
