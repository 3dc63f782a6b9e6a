#ifndef TOOLS_BENCH_TIMING_H_
#define TOOLS_BENCH_TIMING_H_

// How the in-process sections time what they measure.

#include <chrono>
#include <functional>

namespace pipeline {
namespace bench {

using Clock = std::chrono::steady_clock;

// Seconds from `since` to now.
double Seconds(Clock::time_point since);

// Repeats `step` (after `warmup` untimed calls) until `min_seconds` have
// passed and at least `min_steps` ran; returns steps per second.
double StepsPerSecond(double min_seconds, const std::function<void()>& step, int warmup = 1,
                      int min_steps = 3);

}  // namespace bench
}  // namespace pipeline

#endif  // TOOLS_BENCH_TIMING_H_
