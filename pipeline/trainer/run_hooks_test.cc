#include "pipeline/trainer/run_hooks.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/data/loader.h"
#include "pipeline/testing/hook_test_util.h"

namespace pipeline {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;
using testing::HookTestRun;
using testing::Lines;
using testing::ParseConfig;
using testing::TinyDataset;

constexpr char kSkippedSums[] = "sum of the skipped samples";

StepReport Step() {
  StepReport step;
  step.images = 4;
  step.data_seconds = 0.001;
  step.compute_seconds = 0.002;
  step.update_seconds = 0.001;
  return step;
}

TEST(ProfilerHookTest, ReportsOnceAfterTheProfiledSteps) {
  HookTestRun run(ParseConfig(""));
  ProfilerHook hook(2);
  HOOK_TEST_ASSERT_OK(hook.OnStepEnd(run.context(), Step()));
  EXPECT_EQ(run.log(), "");
  HOOK_TEST_ASSERT_OK(hook.OnStepEnd(run.context(), Step()));
  const std::vector<std::string> lines = Lines(run.log());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], StartsWith("profile rank 0, steps 1-2 (4 images each): data wait "));
  HOOK_TEST_ASSERT_OK(hook.OnStepEnd(run.context(), Step()));
  EXPECT_EQ(Lines(run.log()).size(), 1u);
}

TEST(ProfilerHookTest, EveryRankReportsItsOwnToTheLog) {
  HookTestRun run(ParseConfig(""), /*rank=*/1, /*world_size=*/2);
  ProfilerHook hook(1);
  HOOK_TEST_ASSERT_OK(hook.OnStepEnd(run.context(), Step()));
  EXPECT_EQ(run.log(), "");
  EXPECT_THAT(run.other_rank_log(), StartsWith("profile rank 1, steps 1-1"));
  EXPECT_TRUE(run.communicator().calls().empty());
}

// A loader over `dataset` whose epoch 0 has been read to its end.
std::unique_ptr<Loader> ReadEpoch(const TinyDataset& dataset, BadSamplePolicy policy) {
  LoaderOptions options;
  options.batch_size = 4;
  options.num_workers = 1;
  options.on_bad_sample = policy;
  auto loader = std::make_unique<Loader>(&dataset, std::vector<const Transform*>{}, options);
  std::vector<int64_t> order(dataset.size());
  for (int64_t i = 0; i < dataset.size(); ++i) order[i] = i;
  loader->StartEpoch(0, order);
  while (true) {
    absl::StatusOr<std::optional<Batch>> batch = loader->Next();
    EXPECT_TRUE(batch.ok()) << batch.status();
    if (!batch.ok() || !*batch) break;
  }
  return loader;
}

TEST(BadSampleHookTest, CountsEveryRanksSkippedSamples) {
  HookTestRun run(ParseConfig("train_data { on_bad_sample: SKIP }"), /*rank=*/0,
                  /*world_size=*/2);
  const TinyDataset dataset(8, {2, 5});
  const std::unique_ptr<Loader> train = ReadEpoch(dataset, BadSamplePolicy::kReplace);
  ASSERT_EQ(train->skipped().count, 2);
  run.communicator().OtherRanksAdd(kSkippedSums, {3, 0});
  BadSampleHook hook(*train, nullptr);
  EpochReport epoch;
  epoch.epoch = 1;
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), epoch));
  EXPECT_THAT(run.communicator().calls(), ElementsAre(kSkippedSums));
  EXPECT_THAT(run.log(), StartsWith("epoch 1/2: train_data: skipped 5 samples that failed to "
                                    "load (on_bad_sample: SKIP)"));
  EXPECT_THAT(run.log(), HasSubstr("image_2.png"));
  EXPECT_THAT(run.log(), HasSubstr("all 2 processes"));
  EXPECT_EQ(run.events(),
            "{\"event\":\"bad_samples\",\"epoch\":1,\"train_skipped\":5,"
            "\"validation_skipped\":0}\n");
  TrainSummary summary;
  HOOK_TEST_ASSERT_OK(hook.OnRunEnd(run.context(), summary));
  EXPECT_EQ(summary.skipped_samples, 5);
  EXPECT_THAT(run.log(), HasSubstr("bad samples: train_data: skipped 5 times in 1 epoch"));
}

TEST(BadSampleHookTest, ValidationSamplesCountOnlyInEpochsThatValidated) {
  HookTestRun run(ParseConfig("train_data { on_bad_sample: SKIP } "
                              "validation_data { on_bad_sample: SKIP }"));
  const TinyDataset train_data(8), validation_data(6, {1});
  const std::unique_ptr<Loader> train = ReadEpoch(train_data, BadSamplePolicy::kReplace);
  const std::unique_ptr<Loader> validation = ReadEpoch(validation_data, BadSamplePolicy::kDrop);
  ASSERT_EQ(validation->skipped().count, 1);
  BadSampleHook hook(*train, validation.get());
  EpochReport not_validated;
  not_validated.epoch = 1;
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), not_validated));
  EXPECT_THAT(run.events(), HasSubstr("\"train_skipped\":0,\"validation_skipped\":0}"));
  EXPECT_THAT(run.log(), Not(HasSubstr("validation_data: skipped")));
  EpochReport validated;
  validated.epoch = 2;
  validated.validated = true;
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), validated));
  EXPECT_THAT(Lines(run.events()).back(),
              HasSubstr("\"epoch\":2,\"train_skipped\":0,\"validation_skipped\":1}"));
  EXPECT_THAT(run.log(), HasSubstr("epoch 2/2: validation_data: skipped 1 sample that failed"));
  TrainSummary summary;
  HOOK_TEST_ASSERT_OK(hook.OnRunEnd(run.context(), summary));
  EXPECT_EQ(summary.skipped_samples, 1);
}

TEST(BadSampleHookTest, NothingUnderFail) {
  HookTestRun run(ParseConfig(""), /*rank=*/0, /*world_size=*/2);
  const TinyDataset dataset(4);
  const std::unique_ptr<Loader> train = ReadEpoch(dataset, BadSamplePolicy::kFail);
  BadSampleHook hook(*train, nullptr);
  EpochReport epoch;
  epoch.epoch = 1;
  HOOK_TEST_ASSERT_OK(hook.OnEpochEnd(run.context(), epoch));
  EXPECT_THAT(run.communicator().calls(), IsEmpty());
  EXPECT_EQ(run.log(), "");
  EXPECT_EQ(run.events(), "");
  TrainSummary summary;
  HOOK_TEST_ASSERT_OK(hook.OnRunEnd(run.context(), summary));
  EXPECT_EQ(summary.skipped_samples, 0);
}

}  // namespace
}  // namespace pipeline
