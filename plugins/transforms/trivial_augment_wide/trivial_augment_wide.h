#ifndef PLUGINS_TRANSFORMS_TRIVIAL_AUGMENT_WIDE_TRIVIAL_AUGMENT_WIDE_H_
#define PLUGINS_TRANSFORMS_TRIVIAL_AUGMENT_WIDE_TRIVIAL_AUGMENT_WIDE_H_

// torchvision's TrivialAugmentWide split for the transform and its tests:
// the draws of forward() and the op they choose; augment_ops applies it.

#include <vector>

#include "pipeline/interfaces/random.h"
#include "plugins/transforms/augment_ops/augment_ops.h"

namespace pipeline {
namespace trivial_augment_wide {

// What forward() draws with torch.randint, in its order: the op's index in
// the space (uniform), the magnitude bin (uniform; drawn only for ops with
// a table), whether to negate (a fair coin; drawn only for signed ops).
struct Draws {
  int op_index = 0;
  int bin = 0;
  bool negate = false;
};

Draws Draw(const std::vector<augment_ops::OpRange>& space, SampleRandom& random);

// The op and signed magnitude the draws choose.
augment_ops::OpCall CallFor(const std::vector<augment_ops::OpRange>& space, const Draws& draws);

}  // namespace trivial_augment_wide
}  // namespace pipeline

#endif  // PLUGINS_TRANSFORMS_TRIVIAL_AUGMENT_WIDE_TRIVIAL_AUGMENT_WIDE_H_
