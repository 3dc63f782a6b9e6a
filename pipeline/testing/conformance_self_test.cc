// The conformance suites can fail: run on plugins that each break one rule
// (conformance_broken_plugins.cc, <kind>_conformance_broken.cc), exactly the
// tests of the broken rules fail.

#include <set>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/testing/command.h"

namespace pipeline {
namespace testing {
namespace {

// "[  FAILED  ] <instance>/<Suite>.<Test>/options0" lines, as
// "<instance>.<Test>".
std::set<std::string> FailedTests(const std::string& output) {
  std::set<std::string> failed;
  std::istringstream lines(output);
  std::string line;
  const std::string marker = "[  FAILED  ] ";
  while (std::getline(lines, line)) {
    if (line.rfind(marker, 0) != 0) continue;
    std::string name = line.substr(marker.size());
    name = name.substr(0, name.find(','));  // ", where GetParam() = ..."
    name = name.substr(0, name.find(' '));
    const size_t slash = name.find('/');
    const size_t dot = name.find('.');
    const size_t last_slash = name.rfind('/');
    if (slash == std::string::npos || dot == std::string::npos || last_slash <= dot) continue;
    failed.insert(name.substr(0, slash) + name.substr(dot, last_slash - dot));
  }
  return failed;
}

TEST(ConformanceSelfTest, ExactlyTheBrokenRulesFail) {
  const CommandResult result = RunCommand("pipeline/testing/conformance_broken_plugins");
  EXPECT_NE(result.exit_code, 0) << result.output;
  const std::set<std::string> expected = {
      "broken_random_state.TheSameSeedGivesBitwiseTheSameOutput",
      "broken_random_state.ApplyingFromSeveralThreadsAtOnceEqualsApplyingInTurn",
      "broken_channel_map.AChannelMapIsExactlyApply",
      "broken_region_crop.ARegionCropIsPlanRegionThenApplyToRegion",
      "broken_takes_anything.EmptyOrMalformedImagesAreErrorsNotCrashes",
      "broken_shape_by_chance.OutputShapeAndTypeDependOnlyOnTheInputShape",
      "broken_dataset.LabelsIndexTheClassNames",
      "broken_dataset.GetRegionIsGetCutToThePlannedRegion",
      "broken_dataset.GetFromSeveralThreadsAtOnceEqualsGetInTurn",
      "broken_dataset.AnIndexOutOfRangeIsAnErrorNotACrash",
      "broken_schedule_negative.FactorsAreFiniteAndNotNegative",
      "broken_schedule_rises.FactorsFollowTheDeclaredShape",
      "broken_schedule_call_order.FactorDependsOnlyOnItsArgumentsAndTheState",
      "broken_schedule_hidden_state.AScheduleThatMonitorsNothingKeepsNoState",
      "broken_schedule_restore_ignored.ARestoredStateContinuesAsTheUninterruptedRun",
      "broken_schedule_takes_any_state.AMalformedStateIsAnErrorOrHarmless",
      // An index out of range is neither a permutation nor what was left.
      "broken_sampler_one_based.IndicesAreInRange",
      "broken_sampler_one_based.TheRanksTogetherCoverTheEpoch",
      "broken_sampler_one_based.ResumingInAnotherWorldVisitsWhatNoRankTook",
      // A resumed run in another world is built anew: instances that differ
      // resume from what other instances took.
      "broken_sampler_counter_seed.TheSameContextGivesTheSameOrder",
      "broken_sampler_counter_seed.ResumingInAnotherWorldVisitsWhatNoRankTook",
      "broken_sampler_restarts_epoch.ResumingInTheSameWorldContinuesEachRanksOrder",
      "broken_sampler_restarts_epoch.ResumingInAnotherWorldVisitsWhatNoRankTook",
      // Shards dealt wrong from the start are dealt wrong after a resume too.
      "broken_sampler_overlapping_shards.TheRanksTogetherCoverTheEpoch",
      "broken_sampler_overlapping_shards.ResumingInAnotherWorldVisitsWhatNoRankTook",
      "broken_sampler_pads_with_last.TheRanksTogetherCoverTheEpoch",
      "broken_sampler_unpadded_shards.EveryRankGetsEquallyMany",
      "broken_sampler_resume_world.ResumingInAnotherWorldVisitsWhatNoRankTook",
      "broken_optimizer_normalizes_gradients."
      "AStepWithZeroGradientsKeepsParametersFiniteAndZerosAtZero",
      "broken_optimizer_drops_momentum_on_save.SavingAndRestoringTheStateResumesBitwise",
      "broken_optimizer_one_options_for_all_groups."
      "EachParamGroupStepsWithItsOwnOptionsAndKeepsThem",
      // The first group's own weight decay, copied, reaches the others.
      "broken_optimizer_one_options_for_all_groups.AGroupsOwnWeightDecayChangesThatGroupOnly",
      "broken_optimizer_ignores_group_weight_decay.AGroupsOwnWeightDecayChangesThatGroupOnly",
      "broken_optimizer_ignores_lr_changes.ALearningRateSetBeforeAStepIsTheOneItUses",
      "broken_optimizer_decays_gradless.AParameterWithoutAGradientIsLeftAlone",
      "broken_loss_naive_softmax.GivesAFiniteScalarForRandomLogits",
      "broken_loss_sums_for_mean.MeanIsTheMeanOfPerSampleLossesAndSumTheirSum",
      "broken_loss_smooths_indices_only.ClassIndicesEqualTheirOneHotProbabilities",
      "broken_loss_detached.GradientMatchesCentralFiniteDifferences",
      "broken_loss_half_gradient.GradientMatchesCentralFiniteDifferences",
      "broken_loss_logit_penalty.AddingAConstantToARowOfLogitsChangesNothing",
      "broken_loss_broadcasts_targets.WrongShapedTargetsAreErrorsNotCrashes",
      "broken_metric_mean_of_means.SumsAddUpAcrossRanks",
      "broken_metric_keeps_the_best.APassFromEmptySumsStartsFromZero",
      "broken_metric_first_add_overwrites.SumsRestoredIntoAnotherInstanceContinueToTheSameFigures",
      "broken_metric_nan_when_empty.APassWithoutSamplesGivesZerosNotNaN",
      "broken_metric_first_rows_only.TheOrderOfBatchesAndSamplesDoesNotMatter",
      "broken_metric_broadcasts.LogitsAndLabelsThatDoNotFitAreErrors",
      "broken_mix_global_counter.TheSameRandomStreamGivesBitwiseTheSameBatch",
      "broken_mix_targets_short_of_one.TargetRowsAreProbabilities",
      "broken_mix_brightens.EveryOutputPixelLiesWithinTheBatchsPixelsThere",
      "broken_mix_credits_another_image.TargetsCreditTheImagesMixedIntoEachOutput",
      "broken_mix_takes_any_shape.InputsThatDoNotFitAreErrorsNotExceptions",
      "broken_model_squeezes_logits.ForwardGivesOneRowOfFiniteLogitsPerImage",
      "broken_model_jitters_in_eval.EvalModeIsDeterministic",
      "broken_model_batch_statistics_in_eval.EvalLogitsOfAnImageDoNotDependOnTheRestOfTheBatch",
      "broken_model_unused_parameter.EveryTrainableParameterGetsAFiniteGradient",
      "broken_model_head_names_nothing."
      "HeadPrefixesNameExactlyTheParametersShapedByTheClassCount",
      "broken_model_counted_buffer_name.ParameterAndBufferNamesAreStableAcrossConstructions",
      "broken_model_unseeded_init.TheSameSeedGivesTheSameInitialWeights",
      "broken_model_reads_memory_as_contiguous.ChannelsLastGivesTheSameLogits",
      "broken_model_takes_any_channels.AWrongChannelCountIsAnErrorNotACrash",
      "broken_model_frozen_head_bias.FreezeBackboneLeavesExactlyTheHeadTrainable",
      // Weights saved from one construction do not load into another.
      "broken_model_counted_buffer_name.FreezeBackboneLeavesExactlyTheHeadTrainable",
      "broken_model_zero_gradient_scale.AFewSgdStepsChangeEveryTrainableParameter",
      // No step moves a parameter that gets no gradient.
      "broken_model_unused_parameter.AFewSgdStepsChangeEveryTrainableParameter",
      "broken_model_accepts_any_dropout.ProbabilityOptionsOutsideZeroToOneAreRefused",
      "broken_model_claims_a_depth_order.DeclaresADepthOrderExactlyWhenItHasOne",
      "broken_model_misnamed_head.StateDictAndParameterCountMatchTorchvision",
      "broken_model_bias_as_buffer.StateDictAndParameterCountMatchTorchvision",
      "broken_model_other_batch_norm_eps.LogitsMatchTorchvisionForTheSameWeights",
  };
  EXPECT_EQ(FailedTests(result.output), expected) << result.output;
}

}  // namespace
}  // namespace testing
}  // namespace pipeline
