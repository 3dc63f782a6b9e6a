#ifndef PLUGINS_TRANSFORMS_RAND_AUGMENT_RAND_AUGMENT_H_
#define PLUGINS_TRANSFORMS_RAND_AUGMENT_RAND_AUGMENT_H_

// torchvision's RandAugment split for the transform and its tests: the
// draws of forward() and the ops they choose; augment_ops applies them.

#include <vector>

#include "pipeline/interfaces/random.h"
#include "plugins/transforms/augment_ops/augment_ops.h"

namespace pipeline {
namespace rand_augment {

// What forward() draws with torch.randint for one op, in its order: the
// op's index in the space (uniform), whether to negate (a fair coin; drawn
// only for signed ops).
struct Draws {
  int op_index = 0;
  bool negate = false;
};

// The draws of num_ops ops. Which ops are signed does not depend on the
// image size, so any RandAugmentSpace will do.
std::vector<Draws> Draw(const std::vector<augment_ops::OpRange>& space, int num_ops,
                        SampleRandom& random);

// The ops and signed magnitudes the draws choose, all at bin `magnitude`
// of the space for the image's size.
std::vector<augment_ops::OpCall> CallsFor(const std::vector<augment_ops::OpRange>& space,
                                          int magnitude, const std::vector<Draws>& draws);

}  // namespace rand_augment
}  // namespace pipeline

#endif  // PLUGINS_TRANSFORMS_RAND_AUGMENT_RAND_AUGMENT_H_
