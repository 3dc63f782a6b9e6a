#include "tools/bench/timing.h"

namespace pipeline {
namespace bench {

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

double StepsPerSecond(double min_seconds, const std::function<void()>& step, int warmup,
                      int min_steps) {
  for (int i = 0; i < warmup; ++i) step();
  const Clock::time_point start = Clock::now();
  int steps = 0;
  while (steps < min_steps || Seconds(start) < min_seconds) {
    step();
    ++steps;
  }
  return steps / Seconds(start);
}

}  // namespace bench
}  // namespace pipeline
