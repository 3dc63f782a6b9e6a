#ifndef PIPELINE_TESTING_OPTIMIZER_FIXTURE_H_
#define PIPELINE_TESTING_OPTIMIZER_FIXTURE_H_

// The optimizer fixtures of tools/fixtures/optimizers.py: a reference
// implementation (torch's own optimizer, or a NumPy copy of timm's) stepping
// a 3x2 weight and a 3-element bias in float64 through a few fixed
// gradients, with the values of both after every step.

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "pipeline/interfaces/optimizer.h"
#include "pipeline/testing/conformance_config.h"
#include "torch/types.h"

namespace pipeline {
namespace testing {

struct OptimizerFixture {
  std::string options;          // the plugin's options message, text format
  std::vector<double> initial;  // the weight (row-major), then the bias
  std::vector<std::vector<double>> gradients;  // of each step
  std::vector<std::vector<double>> after;      // each step's result
};

inline std::vector<double> ParseNumbers(const std::string& text) {
  std::istringstream in(text);
  std::vector<double> numbers;
  for (double value; in >> value;) numbers.push_back(value);
  return numbers;
}

// Lines "key: value"; lines starting with '#' describe the fixture.
inline OptimizerFixture ReadOptimizerFixture(const std::string& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file.good()) << "cannot read " << path;
  OptimizerFixture fixture;
  for (std::string line; std::getline(file, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t colon = line.find(": ");
    const std::string key = line.substr(0, colon);
    const std::string value = colon == std::string::npos ? "" : line.substr(colon + 2);
    if (key == "options") fixture.options = value;
    if (key == "initial") fixture.initial = ParseNumbers(value);
    if (key == "grad") fixture.gradients.push_back(ParseNumbers(value));
    if (key == "after") fixture.after.push_back(ParseNumbers(value));
  }
  return fixture;
}

// The fixture's values as the weight and the bias.
inline std::vector<torch::Tensor> FixtureTensors(const std::vector<double>& values) {
  const torch::Tensor all = torch::tensor(values, torch::TensorOptions().dtype(torch::kDouble));
  return {all.slice(0, 0, 6).reshape({3, 2}).clone(), all.slice(0, 6, 9).clone()};
}

// Steps optimizer `plugin`, built with the fixture's options over its weight
// and bias in one group, through its gradients; after each step every value
// is within `tolerance` (relative, absolute below 1) of the reference's.
inline void ExpectStepsMatchFixture(const std::string& plugin, const std::string& path,
                                    double tolerance = 1e-12) {
  SCOPED_TRACE(path);
  const OptimizerFixture fixture = ReadOptimizerFixture(path);
  ASSERT_EQ(fixture.initial.size(), 9u);
  ASSERT_FALSE(fixture.gradients.empty());
  ASSERT_EQ(fixture.gradients.size(), fixture.after.size());
  std::vector<torch::Tensor> parameters = FixtureTensors(fixture.initial);
  for (torch::Tensor& p : parameters) p.requires_grad_();
  absl::StatusOr<PluginConfig> config = ConformanceConfig<Optimizer>(plugin, fixture.options);
  ASSERT_TRUE(config.ok()) << config.status();
  auto optimizer =
      Registry<Optimizer>::Global().Create(*config, OptimizerContext::OneGroup(parameters));
  ASSERT_TRUE(optimizer.ok()) << optimizer.status();
  for (size_t step = 0; step < fixture.gradients.size(); ++step) {
    const std::vector<torch::Tensor> gradients = FixtureTensors(fixture.gradients[step]);
    for (size_t i = 0; i < parameters.size(); ++i) parameters[i].mutable_grad() = gradients[i];
    (*optimizer)->step();
    const torch::Tensor actual =
        torch::cat({parameters[0].detach().flatten(), parameters[1].detach().flatten()});
    for (size_t i = 0; i < 9; ++i) {
      const double expected = fixture.after[step][i];
      EXPECT_NEAR(actual[i].item<double>(), expected, tolerance * std::max(1.0, std::abs(expected)))
          << "step " << step + 1 << ", value " << i << (i < 6 ? " (weight)" : " (bias)");
    }
  }
}

}  // namespace testing
}  // namespace pipeline

#endif  // PIPELINE_TESTING_OPTIMIZER_FIXTURE_H_
