#include "pipeline/weights/state_dict_reader.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "caffe2/serialize/inline_container.h"
#include "pipeline/checkpoint/checkpoint.h"
#include "pipeline/util/durable_file.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/util/torch_status.h"
#include "torch/serialize.h"

namespace pipeline {
namespace {

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

ObjectPtr Make(Object::Kind kind) {
  auto object = std::make_shared<Object>();
  object->kind = kind;
  return object;
}

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

// torch.<Type>Storage -> the element type of its tensors.
const std::map<std::string, torch::Dtype>& StorageTypes() {
  static const auto* types = new std::map<std::string, torch::Dtype>{
      {"torch.FloatStorage", torch::kFloat32}, {"torch.DoubleStorage", torch::kFloat64},
      {"torch.HalfStorage", torch::kFloat16},  {"torch.BFloat16Storage", torch::kBFloat16},
      {"torch.LongStorage", torch::kInt64},    {"torch.IntStorage", torch::kInt32},
      {"torch.ShortStorage", torch::kInt16},   {"torch.CharStorage", torch::kInt8},
      {"torch.ByteStorage", torch::kUInt8},    {"torch.BoolStorage", torch::kBool},
  };
  return *types;
}

// A stack machine for the pickle opcodes torch.save (protocol 2) and
// LibTorch's pickle_save emit, plus the few of protocol 4 that are as
// simple. Errors carry the byte offset, which helps tell a truncated
// data.pkl from a foreign one.
class Unpickler {
 public:
  Unpickler(const char* data, size_t size, caffe2::serialize::PyTorchStreamReader& archive)
      : data_(data), size_(size), archive_(archive) {}

  // A pickle can make containers hold each other through its memo; such
  // shared_ptr cycles would never be freed. Every object made here is
  // emptied instead (the result's tensors are taken out by then), which
  // also frees deeply nested containers without deep recursion.
  ~Unpickler() {
    for (const ObjectPtr& object : made_) {
      object->items.clear();
      object->entries.clear();
    }
  }

  absl::StatusOr<ObjectPtr> Run() {
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

 private:
  ObjectPtr New(Object::Kind kind) {
    made_.push_back(Make(kind));
    return made_.back();
  }

  absl::Status Error(const std::string& message) const {
    return absl::InvalidArgumentError(message);
  }

  absl::Status Need(uint64_t bytes) const {
    // Compared with what is left, not position + bytes, which a length field
    // near 2^64 would wrap around.
    if (bytes > size_ - position_) return Error("the pickle ends inside an opcode (truncated?)");
    return absl::OkStatus();
  }

  uint64_t ReadLittleEndian(size_t bytes) {
    uint64_t value = 0;
    for (size_t i = 0; i < bytes; ++i) {
      value |= static_cast<uint64_t>(static_cast<uint8_t>(data_[position_ + i])) << (8 * i);
    }
    position_ += bytes;
    return value;
  }

  absl::StatusOr<std::string> ReadLine() {
    const void* end = std::memchr(data_ + position_, '\n', size_ - position_);
    if (end == nullptr) return Error("the pickle ends inside a GLOBAL name (truncated?)");
    const size_t length = static_cast<const char*>(end) - (data_ + position_);
    std::string line(data_ + position_, length);
    position_ += length + 1;
    return line;
  }

  absl::StatusOr<ObjectPtr> Pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) {
      return Error("an opcode finds the stack empty: not a pickle torch.save writes");
    }
    ObjectPtr top = stack_.back();
    stack_.pop_back();
    return top;
  }

  // The objects above the last MARK, which is removed.
  absl::StatusOr<std::vector<ObjectPtr>> PopMark() {
    if (marks_.empty()) return Error("an opcode needs a MARK that is not there");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<ObjectPtr> items(stack_.begin() + mark, stack_.end());
    stack_.resize(mark);
    return items;
  }

  absl::Status PushString(size_t length_bytes) {
    if (auto status = Need(length_bytes); !status.ok()) return status;
    const uint64_t length = ReadLittleEndian(length_bytes);
    if (auto status = Need(length); !status.ok()) return status;
    auto object = New(Object::Kind::kString);
    object->text.assign(data_ + position_, length);
    position_ += length;
    stack_.push_back(object);
    return absl::OkStatus();
  }

  absl::Status PushInt(int64_t value) {
    auto object = New(Object::Kind::kInt);
    object->integer = value;
    stack_.push_back(object);
    return absl::OkStatus();
  }

  absl::Status PushTuple(size_t count) {
    if (stack_.size() < count + (marks_.empty() ? 0 : marks_.back())) {
      return Error("a TUPLE opcode finds too few objects");
    }
    auto tuple = New(Object::Kind::kTuple);
    tuple->items.assign(stack_.end() - count, stack_.end());
    stack_.resize(stack_.size() - count);
    stack_.push_back(tuple);
    return absl::OkStatus();
  }

  absl::Status Memoize(uint64_t index) {
    if (stack_.empty()) return Error("a PUT opcode finds the stack empty");
    memo_[index] = stack_.back();
    return absl::OkStatus();
  }

  absl::Status Recall(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) return Error(absl::StrCat("GET of memo ", index, ", never PUT"));
    stack_.push_back(it->second);
    return absl::OkStatus();
  }

  absl::Status AddEntries(const std::vector<ObjectPtr>& items) {
    ASSIGN_OR_RETURN(ObjectPtr dict, Pop());
    if (dict->kind != Object::Kind::kDict) {
      return Error(absl::StrCat("SETITEMS on ", KindName(*dict), ", not a dict"));
    }
    if (items.size() % 2 != 0) return Error("SETITEMS with a key but no value");
    for (size_t i = 0; i < items.size(); i += 2) dict->entries.emplace_back(items[i], items[i + 1]);
    stack_.push_back(dict);
    return absl::OkStatus();
  }

  // The storage `pid` names: ('storage', torch.FloatStorage, key, location, numel).
  absl::StatusOr<ObjectPtr> LoadStorage(const Object& pid) {
    if (pid.kind != Object::Kind::kTuple || pid.items.size() != 5 ||
        pid.items[0]->kind != Object::Kind::kString || pid.items[0]->text != "storage" ||
        pid.items[1]->kind != Object::Kind::kGlobal ||
        pid.items[2]->kind != Object::Kind::kString || pid.items[4]->kind != Object::Kind::kInt) {
      return Error("a persistent id that is not a tensor storage");
    }
    const std::string& type = pid.items[1]->text;
    const std::string& key = pid.items[2]->text;
    auto type_it = StorageTypes().find(type);
    if (type_it == StorageTypes().end()) {
      return Error(absl::StrCat("storage ", key, " has type ", type, ", which is not supported"));
    }
    auto cached = storages_.find(key);
    if (cached != storages_.end()) return cached->second;
    const int64_t numel = pid.items[4]->integer;
    const std::string record = "data/" + key;
    if (numel < 0 || !archive_.hasRecord(record)) {
      return Error(
          absl::StrCat("storage ", key, ": the archive has no record ", record, " (truncated?)"));
    }
    auto [bytes, length] = archive_.getRecord(record);
    // Checked before allocating, so a corrupt element count cannot ask for
    // more memory than the record holds.
    const size_t element_size = c10::elementSize(type_it->second);
    if (static_cast<uint64_t>(numel) > length / element_size ||
        static_cast<size_t>(numel) * element_size != length) {
      return Error(absl::StrCat("storage ", key, " holds ", length, " bytes, not the ", numel,
                                " elements of ", type, " its tensors need (truncated?)"));
    }
    const size_t expected = length;
    auto storage = New(Object::Kind::kStorage);
    storage->text = key;
    storage->tensor = torch::empty({numel}, torch::TensorOptions().dtype(type_it->second));
    if (expected > 0) std::memcpy(storage->tensor.data_ptr(), bytes.get(), expected);
    storages_[key] = storage;
    return storage;
  }

  static absl::StatusOr<std::vector<int64_t>> Integers(const Object& tuple, const char* what) {
    if (tuple.kind != Object::Kind::kTuple) {
      return absl::InvalidArgumentError(absl::StrCat("tensor ", what, " is not a tuple"));
    }
    std::vector<int64_t> values;
    for (const ObjectPtr& item : tuple.items) {
      if (item->kind != Object::Kind::kInt) {
        return absl::InvalidArgumentError(absl::StrCat("tensor ", what, " holds a non-integer"));
      }
      values.push_back(item->integer);
    }
    return values;
  }

  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...).
  absl::StatusOr<ObjectPtr> RebuildTensor(const Object& args) {
    if (args.kind != Object::Kind::kTuple || args.items.size() < 4 ||
        args.items[0]->kind != Object::Kind::kStorage ||
        args.items[1]->kind != Object::Kind::kInt) {
      return Error(
          "_rebuild_tensor_v2 with arguments that are not (storage, offset, size, stride)");
    }
    const torch::Tensor& storage = args.items[0]->tensor;
    const int64_t offset = args.items[1]->integer;
    ASSIGN_OR_RETURN(std::vector<int64_t> sizes, Integers(*args.items[2], "size"));
    ASSIGN_OR_RETURN(std::vector<int64_t> strides, Integers(*args.items[3], "stride"));
    if (sizes.size() != strides.size()) return Error("tensor size and stride differ in length");
    // as_strided would read past the storage on a malformed file; check first.
    // Sizes and strides near 2^63 would overflow into a small, passing
    // `last`; such a tensor cannot fit any storage.
    int64_t last = offset;
    bool empty = false;
    bool overflow = false;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] < 0 || strides[i] < 0) return Error("tensor with a negative size or stride");
      if (sizes[i] == 0) empty = true;
      int64_t reach = 0;
      overflow |= __builtin_mul_overflow(sizes[i] - 1, strides[i], &reach) ||
                  __builtin_add_overflow(last, reach, &last);
    }
    if (offset < 0 || (!empty && (overflow || last >= storage.numel()))) {
      return Error(absl::StrCat("a tensor reaches past the end of storage ", args.items[0]->text,
                                " (", storage.numel(), " elements)"));
    }
    auto tensor = New(Object::Kind::kTensor);
    tensor->tensor = empty ? torch::empty(sizes, storage.options())
                           : storage.as_strided(sizes, strides, offset).clone();
    return tensor;
  }

  absl::StatusOr<ObjectPtr> Reduce(const Object& callable, const Object& args) {
    if (callable.kind != Object::Kind::kGlobal) {
      return Error(absl::StrCat("REDUCE calls ", KindName(callable)));
    }
    const std::string& name = callable.text;
    if (name == "collections.OrderedDict") {
      if (args.kind != Object::Kind::kTuple || !args.items.empty()) {
        return Error("collections.OrderedDict with arguments");
      }
      return New(Object::Kind::kDict);
    }
    if (name == "torch._utils._rebuild_tensor_v2") return RebuildTensor(args);
    if (name == "torch._utils._rebuild_parameter") {
      // (data, requires_grad, backward_hooks): a Parameter is its data here.
      if (args.kind != Object::Kind::kTuple || args.items.empty() ||
          args.items[0]->kind != Object::Kind::kTensor) {
        return Error("_rebuild_parameter without a tensor");
      }
      return args.items[0];
    }
    if (name == "torch.jit._pickle.restore_type_tag") {
      // LibTorch's pickler tags typed containers; the value is the first argument.
      if (args.kind != Object::Kind::kTuple || args.items.empty()) {
        return Error("restore_type_tag without a value");
      }
      return args.items[0];
    }
    return Error(absl::StrCat("the pickle builds a ", name, ", which a state dict does not hold"));
  }

  // Returns Cancelled on STOP.
  absl::Status Step(uint8_t opcode) {
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
        stack_.push_back(New(Object::Kind::kTuple));
        return absl::OkStatus();
      case 't': {  // TUPLE
        ASSIGN_OR_RETURN(std::vector<ObjectPtr> items, PopMark());
        auto tuple = New(Object::Kind::kTuple);
        tuple->items = std::move(items);
        stack_.push_back(tuple);
        return absl::OkStatus();
      }
      case 0x85: return PushTuple(1);  // TUPLE1
      case 0x86: return PushTuple(2);  // TUPLE2
      case 0x87: return PushTuple(3);  // TUPLE3
      case ']':                        // EMPTY_LIST
        stack_.push_back(New(Object::Kind::kList));
        return absl::OkStatus();
      case 'l': {  // LIST
        ASSIGN_OR_RETURN(std::vector<ObjectPtr> items, PopMark());
        auto list = New(Object::Kind::kList);
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
        stack_.push_back(New(Object::Kind::kDict));
        return absl::OkStatus();
      case 'd': {  // DICT
        ASSIGN_OR_RETURN(std::vector<ObjectPtr> items, PopMark());
        stack_.push_back(New(Object::Kind::kDict));
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
        stack_.push_back(New(Object::Kind::kNone));
        return absl::OkStatus();
      case 0x88:    // NEWTRUE
      case 0x89: {  // NEWFALSE
        auto object = New(Object::Kind::kBool);
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
        auto object = New(Object::Kind::kFloat);
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
        ASSIGN_OR_RETURN(ObjectPtr storage, LoadStorage(*pid));
        stack_.push_back(storage);
        return absl::OkStatus();
      }
      case 'R': {  // REDUCE
        ASSIGN_OR_RETURN(ObjectPtr args, Pop());
        ASSIGN_OR_RETURN(ObjectPtr callable, Pop());
        ASSIGN_OR_RETURN(ObjectPtr result, Reduce(*callable, *args));
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

  absl::Status PushGlobal(const std::string& name) {
    static const auto* known = new std::set<std::string>{
        "collections.OrderedDict", "torch._utils._rebuild_tensor_v2",
        "torch._utils._rebuild_parameter", "torch.jit._pickle.restore_type_tag"};
    if (!known->count(name) && !StorageTypes().count(name)) {
      return Error(
          absl::StrCat("the pickle refers to ", name, ", which is not part of a state dict"));
    }
    auto object = New(Object::Kind::kGlobal);
    object->text = name;
    stack_.push_back(object);
    return absl::OkStatus();
  }

  const char* data_;
  size_t size_;
  size_t position_ = 0;
  caffe2::serialize::PyTorchStreamReader& archive_;
  std::vector<ObjectPtr> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, ObjectPtr> memo_;
  std::map<std::string, ObjectPtr> storages_;
  std::vector<ObjectPtr> made_;
};

absl::Status InFile(const std::string& path, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(path, ": ", status.message()));
}

// The state dict within the unpickled `root`: root itself, or what it holds
// under "state_dict" or "model".
absl::StatusOr<NamedTensors> FindStateDict(const Object& root, int depth = 0) {
  // A pickle can make a dict hold itself (through its memo); a few levels
  // are all real files use.
  constexpr int kMaxDepth = 4;
  if (depth > kMaxDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("nests \"state_dict\"/\"model\" dicts more than ", kMaxDepth, " deep"));
  }
  if (root.kind != Object::Kind::kDict) {
    return absl::InvalidArgumentError(
        absl::StrCat("holds ", KindName(root), ", not a state dict (a dict of tensors)"));
  }
  for (const char* nested : {"state_dict", "model"}) {
    for (const auto& [key, value] : root.entries) {
      if (key->kind == Object::Kind::kString && key->text == nested &&
          value->kind == Object::Kind::kDict) {
        return FindStateDict(*value, depth + 1);
      }
    }
  }
  NamedTensors tensors;
  std::vector<std::string> others;
  for (const auto& [key, value] : root.entries) {
    if (key->kind != Object::Kind::kString) {
      others.push_back(absl::StrCat("a key that is ", KindName(*key)));
    } else if (value->kind != Object::Kind::kTensor) {
      others.push_back(absl::StrCat("\"", key->text, "\" (", KindName(*value), ")"));
    } else {
      tensors.emplace_back(key->text, value->tensor);
    }
  }
  if (!others.empty()) {
    constexpr size_t kShown = 8;
    const size_t shown = std::min(others.size(), kShown);
    return absl::InvalidArgumentError(absl::StrCat(
        "is not a state dict: besides tensors its dict holds ",
        absl::StrJoin(others.begin(), others.begin() + shown, ", "),
        others.size() > shown ? absl::StrCat(" and ", others.size() - shown, " more") : "",
        "; a state dict may also sit under \"state_dict\" or \"model\""));
  }
  if (tensors.empty()) return absl::InvalidArgumentError("holds an empty dict, no tensors");
  return tensors;
}

bool StartsWith(const std::string& path, const std::string& prefix) {
  std::ifstream file(path, std::ios::binary);
  std::string head(prefix.size(), '\0');
  file.read(head.data(), static_cast<std::streamsize>(head.size()));
  return file.gcount() == static_cast<std::streamsize>(prefix.size()) && head == prefix;
}

// Opens the zip archive torch.save and the trainer write.
absl::StatusOr<std::unique_ptr<caffe2::serialize::PyTorchStreamReader>> OpenArchive(
    const std::string& path) {
  std::ifstream probe(path, std::ios::binary);
  if (!probe) return absl::NotFoundError(absl::StrCat(path, ": cannot open the file"));
  probe.close();
  // Python's torch.save before 1.6 (or with _use_new_zipfile_serialization=
  // False) writes a bare pickle stream: PROTO 2, then the magic number.
  if (StartsWith(path, std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8", 12))) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": is in torch.save's legacy (pre-1.6) format; load and save it again in Python "
        "with torch.save(torch.load(path), new_path) to get the zip format"));
  }
  auto reader =
      CallTorch("", [&] { return std::make_unique<caffe2::serialize::PyTorchStreamReader>(path); });
  if (!reader.ok()) {
    std::string reason(reader.status().message());
    if (reason.rfind(": ", 0) == 0) reason = reason.substr(2);
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": is not a torch.save file nor a checkpoint (truncated, or another format): ", reason));
  }
  return std::move(*reader);
}

}  // namespace

absl::StatusOr<NamedTensors> ReadTorchSaveStateDict(const std::string& path) {
  ASSIGN_OR_RETURN(auto archive, OpenArchive(path));
  auto result = CallTorch("", [&]() -> absl::StatusOr<NamedTensors> {
    if (!archive->hasRecord("data.pkl")) {
      return absl::InvalidArgumentError("the archive has no data.pkl: not a torch.save file");
    }
    auto [pickle, size] = archive->getRecord("data.pkl");
    Unpickler unpickler(static_cast<const char*>(pickle.get()), size, *archive);
    ASSIGN_OR_RETURN(ObjectPtr root, unpickler.Run());
    return FindStateDict(*root);
  });
  // CallTorch nests the StatusOr when the lambda returns one.
  if (!result.ok()) {
    std::string reason(result.status().message());
    if (reason.rfind(": ", 0) == 0) reason = reason.substr(2);
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": a damaged archive (truncated?): ", reason));
  }
  if (!result->ok()) return InFile(path, result->status());
  return std::move(**result);
}

absl::StatusOr<NamedTensors> ReadStateDict(const std::string& path) {
  bool checkpoint = false;
  {
    ASSIGN_OR_RETURN(auto archive, OpenArchive(path));
    // The trainer's checkpoints are TorchScript archives (torch::serialize),
    // which carry constants.pkl; torch.save files never do.
    checkpoint = archive->hasRecord("constants.pkl");
  }
  if (!checkpoint) return ReadTorchSaveStateDict(path);
  ASSIGN_OR_RETURN(LoadedCheckpoint loaded, ReadCheckpoint(path));
  return std::move(loaded.model);
}

absl::Status WriteStateDict(const std::string& path, const NamedTensors& tensors) {
  return CallTorch(absl::StrCat("writing ", path), [&]() -> absl::Status {
    c10::Dict<std::string, at::Tensor> dict;
    for (const auto& [name, tensor] : tensors) dict.insert(name, tensor.contiguous());
    const std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
    return WriteFileAtomically(path, std::string(bytes.begin(), bytes.end()));
  });
}

}  // namespace pipeline
