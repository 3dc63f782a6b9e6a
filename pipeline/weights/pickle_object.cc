#include "pipeline/weights/pickle_object.h"

namespace pipeline {
namespace state_dict_internal {

std::string KindName(const Object& object) {
  switch (object.kind) {
    case Object::Kind::kNone: return "None";
    case Object::Kind::kBool: return "a bool";
    case Object::Kind::kInt: return "an int";
    case Object::Kind::kFloat: return "a float";
    case Object::Kind::kString: return "a string";
    case Object::Kind::kTuple: return "a tuple";
    case Object::Kind::kList: return "a list";
    case Object::Kind::kDict: return "a dict";
    case Object::Kind::kGlobal: return object.text;
    case Object::Kind::kStorage: return "a storage";
    case Object::Kind::kTensor: return "a tensor";
  }
  return "an object";
}

ObjectArena::~ObjectArena() {
  for (const ObjectPtr& object : made_) {
    object->items.clear();
    object->entries.clear();
  }
}

ObjectPtr ObjectArena::New(Object::Kind kind) {
  auto object = std::make_shared<Object>();
  object->kind = kind;
  made_.push_back(object);
  return object;
}

}  // namespace state_dict_internal
}  // namespace pipeline
