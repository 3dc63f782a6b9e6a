#ifndef PIPELINE_TESTING_SCHEDULE_FIXTURE_H_
#define PIPELINE_TESTING_SCHEDULE_FIXTURE_H_

// The learning-rate fixtures of tools/fixtures/lr_schedules.py: PyTorch's
// scheduler stepping SGD(lr=kFixtureBaseLr) through kFixtureTotalSteps
// optimizer steps of kFixtureStepsPerEpoch per epoch.

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace pipeline {
namespace testing {

constexpr double kFixtureBaseLr = 0.1;
constexpr int64_t kFixtureTotalSteps = 37;
constexpr int64_t kFixtureStepsPerEpoch = 10;

// One learning rate per line; lines starting with '#' describe the fixture.
inline std::vector<double> ReadLearningRates(const std::string& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file.good()) << "cannot read " << path;
  std::vector<double> rates;
  for (std::string line; std::getline(file, line);) {
    if (!line.empty() && line[0] != '#') rates.push_back(std::stod(line));
  }
  return rates;
}

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_SCHEDULE_FIXTURE_H_
