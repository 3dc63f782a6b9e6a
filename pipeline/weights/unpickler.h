#ifndef PIPELINE_WEIGHTS_UNPICKLER_H_
#define PIPELINE_WEIGHTS_UNPICKLER_H_

// A stack machine for the pickle opcodes torch.save (protocol 2) and
// LibTorch's pickle_save emit, plus the few of protocol 4 that are as
// simple. What the pickle's globals and persistent ids stand for is
// StateDictGlobals' part (state_dict_globals.h). Errors carry the byte
// offset, which helps tell a truncated data.pkl from a foreign one.
// Internal to //pipeline/weights:state_dict_reader.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "caffe2/serialize/inline_container.h"
#include "pipeline/weights/pickle_object.h"
#include "pipeline/weights/state_dict_globals.h"

namespace pipeline {
namespace state_dict_internal {

class Unpickler {
 public:
  // `data` is the archive's data.pkl; storages are read from `archive`.
  Unpickler(const char* data, size_t size, caffe2::serialize::PyTorchStreamReader& archive)
      : data_(data), size_(size), globals_(archive, arena_) {}

  // The pickle's object. Its containers are emptied when this Unpickler
  // goes (ObjectArena), so take what is needed out of it before then.
  absl::StatusOr<ObjectPtr> Run();

 private:
  absl::Status Need(uint64_t bytes) const;
  uint64_t ReadLittleEndian(size_t bytes);
  absl::StatusOr<std::string> ReadLine();
  absl::StatusOr<ObjectPtr> Pop();
  // The objects above the last MARK, which is removed.
  absl::StatusOr<std::vector<ObjectPtr>> PopMark();
  absl::Status PushString(size_t length_bytes);
  absl::Status PushInt(int64_t value);
  absl::Status PushTuple(size_t count);
  absl::Status Memoize(uint64_t index);
  absl::Status Recall(uint64_t index);
  absl::Status AddEntries(const std::vector<ObjectPtr>& items);
  // Returns Cancelled on STOP.
  absl::Status Step(uint8_t opcode);
  absl::Status PushGlobal(const std::string& name);

  const char* data_;
  size_t size_;
  size_t position_ = 0;
  ObjectArena arena_;  // before globals_, which makes objects in it
  StateDictGlobals globals_;
  std::vector<ObjectPtr> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, ObjectPtr> memo_;
};

}  // namespace state_dict_internal
}  // namespace pipeline

#endif  // PIPELINE_WEIGHTS_UNPICKLER_H_
