#ifndef PIPELINE_INTERFACES_TRANSFORM_H_
#define PIPELINE_INTERFACES_TRANSFORM_H_

#include "absl/status/status.h"
#include "pipeline/interfaces/image.h"
#include "pipeline/interfaces/random.h"
#include "pipeline/registry/registry.h"

namespace pipeline {

// One step of per-sample preprocessing, applied in place. Called from several
// loader threads at once: implementations keep no mutable state and draw all
// randomness from `random`.
class Transform {
 public:
  virtual ~Transform() = default;
  virtual absl::Status Apply(Image& image, SampleRandom& random) const = 0;
};

struct TransformContext {};

template <>
struct PluginKind<Transform> {
  static constexpr const char* kName = "transform";
  using Context = TransformContext;
};

}  // namespace pipeline

#endif  // PIPELINE_INTERFACES_TRANSFORM_H_
