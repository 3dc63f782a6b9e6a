#include "plugins/strategies/ddp/slurm_nodes.h"

#include "gtest/gtest.h"

namespace pipeline {
namespace {

TEST(FirstSlurmHostTest, TakesTheFirstHostOfEachForm) {
  EXPECT_EQ(FirstSlurmHost("node7"), "node7");
  EXPECT_EQ(FirstSlurmHost("alpha,beta"), "alpha");
  EXPECT_EQ(FirstSlurmHost("gpu[03-05,09],cpu1"), "gpu03");
  EXPECT_EQ(FirstSlurmHost("gpu[12,14]"), "gpu12");
  EXPECT_EQ(FirstSlurmHost("login,gpu[1-2]"), "login");
  EXPECT_EQ(FirstSlurmHost(""), "");
}

}  // namespace
}  // namespace pipeline
