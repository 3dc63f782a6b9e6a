#ifndef PIPELINE_INTERFACES_RANDOM_H_
#define PIPELINE_INTERFACES_RANDOM_H_

#include <cstdint>
#include <random>

namespace pipeline {

// The random source handed to transforms. Each sample gets its own generator
// seeded from (run seed, epoch, sample index), so augmentation is the same
// whatever the number of loader threads. The distributions are written out
// here because std::uniform_real_distribution differs between standard
// libraries, and results should not.
class SampleRandom {
 public:
  SampleRandom(uint64_t seed, uint64_t epoch, uint64_t index)
      : engine_(Mix(Mix(Mix(seed) ^ epoch) ^ index)) {}

  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  // Uniform integer in [0, n).
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : engine_() % n; }
  bool Bernoulli(double p) { return Uniform() < p; }

  // SplitMix64 finaliser: spreads nearby seeds far apart.
  static uint64_t Mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_RANDOM_H_
