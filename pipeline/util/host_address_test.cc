#include "pipeline/util/host_address.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

TEST(HostAddressTest, LocalhostIsLoopbackWithoutAskingTheResolver) {
  EXPECT_EQ(LoopbackIfLocalhost("localhost"), "127.0.0.1");
  EXPECT_EQ(LoopbackIfLocalhost("LocalHost"), "127.0.0.1");
  EXPECT_EQ(LoopbackIfLocalhost("node-1"), "node-1");
}

TEST(HostAddressTest, NumericAddressesResolve) {
  EXPECT_TRUE(CheckHostResolves("127.0.0.1", "MASTER_ADDR").ok());
  EXPECT_TRUE(CheckHostResolves("::1", "MASTER_ADDR").ok());
  EXPECT_TRUE(CheckHostResolves("10.213.0.7", "MASTER_ADDR").ok());
}

// ".invalid" never resolves (RFC 2606), on any network.
TEST(HostAddressTest, ANameThatDoesNotResolveIsNamedWithItsSource) {
  const absl::Status status = CheckHostResolves("no-such-host.invalid", "SLURM_JOB_NODELIST");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("the rendezvous host \"no-such-host.invalid\" (from "
                                          "SLURM_JOB_NODELIST) does not resolve: "));
}

}  // namespace
}  // namespace pipeline
