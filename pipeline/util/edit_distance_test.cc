#include "pipeline/util/edit_distance.h"

#include "gtest/gtest.h"

namespace pipeline {
namespace {

TEST(EditDistanceTest, CountsInsertionsDeletionsSubstitutions) {
  EXPECT_EQ(EditDistance("resnet", "resnet"), 0);
  EXPECT_EQ(EditDistance("resnt", "resnet"), 1);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
  EXPECT_EQ(EditDistance("", "abc"), 3);
}

TEST(EditDistanceTest, ClosestMatchIgnoresFarCandidates) {
  EXPECT_EQ(ClosestMatch("resnt", {"sgd", "resnet", "random"}), "resnet");
  EXPECT_EQ(ClosestMatch("transformer", {"sgd", "adam"}), "");
  EXPECT_EQ(DidYouMean("adm", {"adam", "sgd"}), " Did you mean \"adam\"?");
}

}  // namespace
}  // namespace pipeline
