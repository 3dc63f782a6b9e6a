#ifndef PIPELINE_WEIGHTS_PICKLE_OBJECT_H_
#define PIPELINE_WEIGHTS_PICKLE_OBJECT_H_

// The objects the state dict reader's unpickler makes (unpickler.h), and the
// arena that owns them. Internal to //pipeline/weights:state_dict_reader.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "torch/types.h"

namespace pipeline {
namespace state_dict_internal {

// One unpickled object. Only what a state dict is made of; a dict keeps
// insertion order, as Python's does.
struct Object;
using ObjectPtr = std::shared_ptr<Object>;

struct Object {
  enum class Kind {
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kTuple,
    kList,
    kDict,
    kGlobal,
    kStorage,
    kTensor
  };
  Kind kind = Kind::kNone;
  int64_t integer = 0;           // kBool, kInt
  double real = 0;               // kFloat
  std::string text;              // kString; kGlobal: "module.name"; kStorage: its record key
  std::vector<ObjectPtr> items;  // kTuple, kList
  std::vector<std::pair<ObjectPtr, ObjectPtr>> entries;  // kDict
  torch::Tensor tensor;  // kTensor; kStorage: the whole storage, 1-D
};

// What `object` is, for messages: "a dict", "an int", a global's name.
std::string KindName(const Object& object);

// Makes, and owns, the objects of one unpickling.
class ObjectArena {
 public:
  ObjectArena() = default;
  ObjectArena(const ObjectArena&) = delete;
  ObjectArena& operator=(const ObjectArena&) = delete;

  // A pickle can make containers hold each other through its memo; such
  // shared_ptr cycles would never be freed. Every object made here is
  // emptied instead (the result's tensors are taken out by then), which
  // also frees deeply nested containers without deep recursion.
  ~ObjectArena();

  ObjectPtr New(Object::Kind kind);

 private:
  std::vector<ObjectPtr> made_;
};

}  // namespace state_dict_internal
}  // namespace pipeline

#endif  // PIPELINE_WEIGHTS_PICKLE_OBJECT_H_
