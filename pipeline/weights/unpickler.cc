#include "pipeline/weights/unpickler.h"

#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace state_dict_internal {
namespace {

absl::Status Error(const std::string& message) { return absl::InvalidArgumentError(message); }

}  // namespace

absl::StatusOr<ObjectPtr> Unpickler::Run() {
  while (true) {
    if (position_ >= size_) return Error("the pickle ends before its STOP opcode (truncated?)");
    const size_t at = position_;
    const uint8_t opcode = static_cast<uint8_t>(data_[position_++]);
    absl::Status status = Step(opcode);
    if (status.code() == absl::StatusCode::kCancelled) break;  // STOP
    if (!status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat("data.pkl byte ", at, ": ", status.message()));
    }
  }
  if (stack_.size() != 1) return Error("the pickle leaves no single object");
  return stack_.back();
}

absl::Status Unpickler::Need(uint64_t bytes) const {
  // Compared with what is left, not position + bytes, which a length field
  // near 2^64 would wrap around.
  if (bytes > size_ - position_) return Error("the pickle ends inside an opcode (truncated?)");
  return absl::OkStatus();
}

uint64_t Unpickler::ReadLittleEndian(size_t bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(static_cast<uint8_t>(data_[position_ + i])) << (8 * i);
  }
  position_ += bytes;
  return value;
}

absl::StatusOr<std::string> Unpickler::ReadLine() {
  const void* end = std::memchr(data_ + position_, '\n', size_ - position_);
  if (end == nullptr) return Error("the pickle ends inside a GLOBAL name (truncated?)");
  const size_t length = static_cast<const char*>(end) - (data_ + position_);
  std::string line(data_ + position_, length);
  position_ += length + 1;
  return line;
}

absl::StatusOr<ObjectPtr> Unpickler::Pop() {
  if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) {
    return Error("an opcode finds the stack empty: not a pickle torch.save writes");
  }
  ObjectPtr top = stack_.back();
  stack_.pop_back();
  return top;
}

absl::StatusOr<std::vector<ObjectPtr>> Unpickler::PopMark() {
  if (marks_.empty()) return Error("an opcode needs a MARK that is not there");
  const size_t mark = marks_.back();
  marks_.pop_back();
  std::vector<ObjectPtr> items(stack_.begin() + mark, stack_.end());
  stack_.resize(mark);
  return items;
}

absl::Status Unpickler::PushString(size_t length_bytes) {
  if (auto status = Need(length_bytes); !status.ok()) return status;
  const uint64_t length = ReadLittleEndian(length_bytes);
  if (auto status = Need(length); !status.ok()) return status;
  auto object = arena_.New(Object::Kind::kString);
  object->text.assign(data_ + position_, length);
  position_ += length;
  stack_.push_back(object);
  return absl::OkStatus();
}

absl::Status Unpickler::PushInt(int64_t value) {
  auto object = arena_.New(Object::Kind::kInt);
  object->integer = value;
  stack_.push_back(object);
  return absl::OkStatus();
}

absl::Status Unpickler::PushTuple(size_t count) {
  if (stack_.size() < count + (marks_.empty() ? 0 : marks_.back())) {
    return Error("a TUPLE opcode finds too few objects");
  }
  auto tuple = arena_.New(Object::Kind::kTuple);
  tuple->items.assign(stack_.end() - count, stack_.end());
  stack_.resize(stack_.size() - count);
  stack_.push_back(tuple);
  return absl::OkStatus();
}

absl::Status Unpickler::Memoize(uint64_t index) {
  if (stack_.empty()) return Error("a PUT opcode finds the stack empty");
  memo_[index] = stack_.back();
  return absl::OkStatus();
}

absl::Status Unpickler::Recall(uint64_t index) {
  auto it = memo_.find(index);
  if (it == memo_.end()) return Error(absl::StrCat("GET of memo ", index, ", never PUT"));
  stack_.push_back(it->second);
  return absl::OkStatus();
}

absl::Status Unpickler::AddEntries(const std::vector<ObjectPtr>& items) {
  ASSIGN_OR_RETURN(ObjectPtr dict, Pop());
  if (dict->kind != Object::Kind::kDict) {
    return Error(absl::StrCat("SETITEMS on ", KindName(*dict), ", not a dict"));
  }
  if (items.size() % 2 != 0) return Error("SETITEMS with a key but no value");
  for (size_t i = 0; i < items.size(); i += 2) dict->entries.emplace_back(items[i], items[i + 1]);
  stack_.push_back(dict);
  return absl::OkStatus();
}

absl::Status Unpickler::Step(uint8_t opcode) {
  switch (opcode) {
    case 0x80:  // PROTO
      RETURN_IF_ERROR(Need(1));
      ++position_;
      return absl::OkStatus();
    case 0x95:  // FRAME (protocol 4): only a size hint
      RETURN_IF_ERROR(Need(8));
      position_ += 8;
      return absl::OkStatus();
    case '.':  // STOP
      return absl::CancelledError();
    case 'c': {  // GLOBAL
      ASSIGN_OR_RETURN(std::string module, ReadLine());
      ASSIGN_OR_RETURN(std::string name, ReadLine());
      return PushGlobal(module + "." + name);
    }
    case 0x93: {  // STACK_GLOBAL
      ASSIGN_OR_RETURN(ObjectPtr name, Pop());
      ASSIGN_OR_RETURN(ObjectPtr module, Pop());
      if (name->kind != Object::Kind::kString || module->kind != Object::Kind::kString) {
        return Error("STACK_GLOBAL without two strings");
      }
      return PushGlobal(module->text + "." + name->text);
    }
    case '(':  // MARK
      marks_.push_back(stack_.size());
      return absl::OkStatus();
    case ')':  // EMPTY_TUPLE
      stack_.push_back(arena_.New(Object::Kind::kTuple));
      return absl::OkStatus();
    case 't': {  // TUPLE
      ASSIGN_OR_RETURN(std::vector<ObjectPtr> items, PopMark());
      auto tuple = arena_.New(Object::Kind::kTuple);
      tuple->items = std::move(items);
      stack_.push_back(tuple);
      return absl::OkStatus();
    }
    case 0x85: return PushTuple(1);  // TUPLE1
    case 0x86: return PushTuple(2);  // TUPLE2
    case 0x87: return PushTuple(3);  // TUPLE3
    case ']':                        // EMPTY_LIST
      stack_.push_back(arena_.New(Object::Kind::kList));
      return absl::OkStatus();
    case 'l': {  // LIST
      ASSIGN_OR_RETURN(std::vector<ObjectPtr> items, PopMark());
      auto list = arena_.New(Object::Kind::kList);
      list->items = std::move(items);
      stack_.push_back(list);
      return absl::OkStatus();
    }
    case 'a':    // APPEND
    case 'e': {  // APPENDS
      std::vector<ObjectPtr> items;
      if (opcode == 'a') {
        ASSIGN_OR_RETURN(ObjectPtr item, Pop());
        items.push_back(item);
      } else {
        ASSIGN_OR_RETURN(items, PopMark());
      }
      ASSIGN_OR_RETURN(ObjectPtr list, Pop());
      if (list->kind != Object::Kind::kList) return Error("APPEND to something not a list");
      list->items.insert(list->items.end(), items.begin(), items.end());
      stack_.push_back(list);
      return absl::OkStatus();
    }
    case '}':  // EMPTY_DICT
      stack_.push_back(arena_.New(Object::Kind::kDict));
      return absl::OkStatus();
    case 'd': {  // DICT
      ASSIGN_OR_RETURN(std::vector<ObjectPtr> items, PopMark());
      stack_.push_back(arena_.New(Object::Kind::kDict));
      return AddEntries(items);
    }
    case 's': {  // SETITEM
      ASSIGN_OR_RETURN(ObjectPtr value, Pop());
      ASSIGN_OR_RETURN(ObjectPtr key, Pop());
      return AddEntries({key, value});
    }
    case 'u': {  // SETITEMS
      ASSIGN_OR_RETURN(std::vector<ObjectPtr> items, PopMark());
      return AddEntries(items);
    }
    case 'N':  // NONE
      stack_.push_back(arena_.New(Object::Kind::kNone));
      return absl::OkStatus();
    case 0x88:    // NEWTRUE
    case 0x89: {  // NEWFALSE
      auto object = arena_.New(Object::Kind::kBool);
      object->integer = opcode == 0x88;
      stack_.push_back(object);
      return absl::OkStatus();
    }
    case 'K':  // BININT1
      RETURN_IF_ERROR(Need(1));
      return PushInt(static_cast<int64_t>(ReadLittleEndian(1)));
    case 'M':  // BININT2
      RETURN_IF_ERROR(Need(2));
      return PushInt(static_cast<int64_t>(ReadLittleEndian(2)));
    case 'J':  // BININT: signed 32 bits
      RETURN_IF_ERROR(Need(4));
      return PushInt(static_cast<int32_t>(ReadLittleEndian(4)));
    case 0x8a: {  // LONG1: two's complement, little-endian, up to 8 bytes here
      RETURN_IF_ERROR(Need(1));
      const size_t length = ReadLittleEndian(1);
      if (length > 8) return Error("an integer wider than 64 bits");
      RETURN_IF_ERROR(Need(length));
      uint64_t value = ReadLittleEndian(length);
      if (length > 0 && length < 8 && (value >> (8 * length - 1)) & 1) {
        value |= ~uint64_t{0} << (8 * length);  // sign-extend
      }
      return PushInt(static_cast<int64_t>(value));
    }
    case 'G': {  // BINFLOAT: big-endian double
      RETURN_IF_ERROR(Need(8));
      uint64_t bits = 0;
      for (int i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<uint8_t>(data_[position_ + i]);
      position_ += 8;
      auto object = arena_.New(Object::Kind::kFloat);
      std::memcpy(&object->real, &bits, sizeof(bits));
      stack_.push_back(object);
      return absl::OkStatus();
    }
    case 0x8c: return PushString(1);  // SHORT_BINUNICODE
    case 'X': return PushString(4);   // BINUNICODE
    case 0x8d: return PushString(8);  // BINUNICODE8
    case 'q':                         // BINPUT
      RETURN_IF_ERROR(Need(1));
      return Memoize(ReadLittleEndian(1));
    case 'r':  // LONG_BINPUT
      RETURN_IF_ERROR(Need(4));
      return Memoize(ReadLittleEndian(4));
    case 0x94:  // MEMOIZE
      return Memoize(memo_.size());
    case 'h':  // BINGET
      RETURN_IF_ERROR(Need(1));
      return Recall(ReadLittleEndian(1));
    case 'j':  // LONG_BINGET
      RETURN_IF_ERROR(Need(4));
      return Recall(ReadLittleEndian(4));
    case 'Q': {  // BINPERSID
      ASSIGN_OR_RETURN(ObjectPtr pid, Pop());
      ASSIGN_OR_RETURN(ObjectPtr storage, globals_.LoadStorage(*pid));
      stack_.push_back(storage);
      return absl::OkStatus();
    }
    case 'R': {  // REDUCE
      ASSIGN_OR_RETURN(ObjectPtr args, Pop());
      ASSIGN_OR_RETURN(ObjectPtr callable, Pop());
      ASSIGN_OR_RETURN(ObjectPtr result, globals_.Reduce(*callable, *args));
      stack_.push_back(result);
      return absl::OkStatus();
    }
    case 'b': {  // BUILD
      // The state set on an object after it is made: a state dict's
      // _metadata (module versions), which loading does not need.
      ASSIGN_OR_RETURN(ObjectPtr state, Pop());
      if (stack_.empty()) return Error("BUILD without an object");
      return absl::OkStatus();
    }
    default: {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02x", opcode);
      return Error(
          absl::StrCat("pickle opcode ", hex, " is not one torch.save uses for a state dict"));
    }
  }
}

absl::Status Unpickler::PushGlobal(const std::string& name) {
  if (!StateDictGlobals::IsKnown(name)) {
    return Error(
        absl::StrCat("the pickle refers to ", name, ", which is not part of a state dict"));
  }
  auto object = arena_.New(Object::Kind::kGlobal);
  object->text = name;
  stack_.push_back(object);
  return absl::OkStatus();
}

}  // namespace state_dict_internal
}  // namespace pipeline
