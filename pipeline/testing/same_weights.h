#ifndef PIPELINE_TESTING_SAME_WEIGHTS_H_
#define PIPELINE_TESTING_SAME_WEIGHTS_H_

// Whether two checkpoints hold bitwise the same model at the same step: the
// check behind every exact-resume test.

#include <string>

#include "gtest/gtest.h"
#include "pipeline/checkpoint/checkpoint.h"

namespace pipeline {
namespace testing {

inline void ExpectSameModel(const std::string& a, const std::string& b) {
  auto first = ReadCheckpoint(a);
  auto second = ReadCheckpoint(b);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_EQ(first->model.size(), second->model.size());
  for (size_t i = 0; i < first->model.size(); ++i) {
    EXPECT_EQ(first->model[i].first, second->model[i].first);
    EXPECT_TRUE(first->model[i].second.equal(second->model[i].second)) << first->model[i].first;
  }
  EXPECT_EQ(first->contents.step, second->contents.step);
  // trainer.ema's average and the hooks' state, where the run keeps them.
  ASSERT_EQ(first->contents.ema.size(), second->contents.ema.size());
  for (size_t i = 0; i < first->contents.ema.size(); ++i) {
    EXPECT_TRUE(first->contents.ema[i].second.equal(second->contents.ema[i].second))
        << "ema " << first->contents.ema[i].first;
  }
  EXPECT_EQ(first->contents.states, second->contents.states);
}

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_SAME_WEIGHTS_H_
