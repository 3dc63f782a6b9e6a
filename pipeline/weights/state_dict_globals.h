#ifndef PIPELINE_WEIGHTS_STATE_DICT_GLOBALS_H_
#define PIPELINE_WEIGHTS_STATE_DICT_GLOBALS_H_

// What the globals and persistent ids in a state dict's pickle stand for,
// done here in C++ rather than called: the storages BINPERSID names, read
// from the archive's data/ records; tensors rebuilt as views of them
// (torch._utils._rebuild_tensor_v2); and the few other callables such a
// pickle REDUCEs. Any other global is refused, so nothing a file names is
// run. Internal to //pipeline/weights:state_dict_reader.

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "caffe2/serialize/inline_container.h"
#include "pipeline/weights/pickle_object.h"

namespace pipeline {
namespace state_dict_internal {

class StateDictGlobals {
 public:
  // Objects are made in `arena`; both must outlive this.
  StateDictGlobals(caffe2::serialize::PyTorchStreamReader& archive, ObjectArena& arena)
      : archive_(archive), arena_(arena) {}

  // Whether a pickle may name the global `name` ("module.name").
  static bool IsKnown(const std::string& name);

  // The storage `pid` names: ('storage', torch.FloatStorage, key, location, numel).
  absl::StatusOr<ObjectPtr> LoadStorage(const Object& pid);

  // The result of calling the global `callable` with the tuple `args`.
  absl::StatusOr<ObjectPtr> Reduce(const Object& callable, const Object& args);

 private:
  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...).
  absl::StatusOr<ObjectPtr> RebuildTensor(const Object& args);

  caffe2::serialize::PyTorchStreamReader& archive_;
  ObjectArena& arena_;
  std::map<std::string, ObjectPtr> storages_;  // by record key
};

}  // namespace state_dict_internal
}  // namespace pipeline

#endif  // PIPELINE_WEIGHTS_STATE_DICT_GLOBALS_H_
