#include "plugins/strategies/ddp/rendezvous.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;

StrategyContext WithEnvironment(std::map<std::string, std::string> variables) {
  StrategyContext context;
  context.environment = [variables](const std::string& name) {
    const auto found = variables.find(name);
    return found == variables.end() ? std::string() : found->second;
  };
  return context;
}

TEST(RendezvousTest, TorchrunVariables) {
  auto r = ReadRendezvous(WithEnvironment({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"},
                                           {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29600"},
                                           {"TORCHELASTIC_RESTART_COUNT", "2"},
                                           {"TORCHELASTIC_USE_AGENT_STORE", "True"}}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->agent_store);
  EXPECT_EQ(r->rank, 3);
  EXPECT_EQ(r->world_size, 4);
  EXPECT_EQ(r->local_rank, 1);
  EXPECT_EQ(r->master_addr, "10.0.0.1");
  EXPECT_EQ(r->master_addr_source, "MASTER_ADDR");
  EXPECT_EQ(r->master_port, 29600);
  EXPECT_EQ(r->restart_count, 2);
  EXPECT_FALSE(r->host.empty());
}

TEST(RendezvousTest, SlurmVariablesAloneWithRankZeroOnTheFirstHost) {
  auto r = ReadRendezvous(WithEnvironment({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"},
                                           {"SLURM_LOCALID", "1"},
                                           {"SLURM_JOB_NODELIST", "gpu[07-10]"}}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->agent_store);
  EXPECT_EQ(r->rank, 5);
  EXPECT_EQ(r->world_size, 8);
  EXPECT_EQ(r->local_rank, 1);
  EXPECT_EQ(r->master_addr, "gpu07");
  EXPECT_EQ(r->master_addr_source, "the first host of SLURM_JOB_NODELIST=gpu[07-10]");
  EXPECT_EQ(r->master_port, 29500);
}

TEST(RendezvousTest, OpenMpiVariablesAloneAndLocalhostIsLoopback) {
  auto r = ReadRendezvous(WithEnvironment({{"OMPI_COMM_WORLD_RANK", "1"},
                                           {"OMPI_COMM_WORLD_SIZE", "2"},
                                           {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                           {"MASTER_ADDR", "localhost"}}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rank, 1);
  EXPECT_EQ(r->world_size, 2);
  EXPECT_EQ(r->local_rank, 1);
  EXPECT_EQ(r->master_addr, "127.0.0.1");
}

TEST(RendezvousTest, TorchrunsVariablesWinAndLocalRankDefaultsToTheRank) {
  auto r = ReadRendezvous(WithEnvironment({{"RANK", "1"}, {"WORLD_SIZE", "2"},
                                           {"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "9"}}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rank, 1);
  EXPECT_EQ(r->world_size, 2);
  EXPECT_EQ(r->local_rank, 1);
  EXPECT_EQ(r->master_addr, "127.0.0.1");
  EXPECT_EQ(r->master_addr_source,
            "the default, as neither MASTER_ADDR nor SLURM_JOB_NODELIST is set");
}

TEST(RendezvousTest, BadValuesAreNamed) {
  auto missing = ReadRendezvous(WithEnvironment({}));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("environment variable RANK is not set; start ddp runs with `train` "
                        "itself"));
  EXPECT_EQ(ReadRendezvous(WithEnvironment({{"RANK", "x"}, {"WORLD_SIZE", "2"}}))
                .status()
                .message(),
            "environment variable RANK=\"x\" is not a number >= 0");
  EXPECT_EQ(ReadRendezvous(WithEnvironment({{"RANK", "2"}, {"WORLD_SIZE", "2"}}))
                .status()
                .message(),
            "RANK=2 WORLD_SIZE=2: the rank must be below the world size");
  EXPECT_EQ(ReadRendezvous(WithEnvironment({{"RANK", "0"}, {"WORLD_SIZE", "1"},
                                            {"MASTER_PORT", "70000"}}))
                .status()
                .message(),
            "MASTER_PORT=70000 is not a TCP port (1-65535)");
}

}  // namespace
}  // namespace pipeline
