#include "pipeline/weights/state_dict_globals.h"

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/util/status_macros.h"

namespace pipeline {
namespace state_dict_internal {
namespace {

absl::Status Error(const std::string& message) { return absl::InvalidArgumentError(message); }

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

absl::StatusOr<std::vector<int64_t>> Integers(const Object& tuple, const char* what) {
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

}  // namespace

bool StateDictGlobals::IsKnown(const std::string& name) {
  static const auto* known = new std::set<std::string>{
      "collections.OrderedDict", "torch._utils._rebuild_tensor_v2",
      "torch._utils._rebuild_parameter", "torch.jit._pickle.restore_type_tag"};
  return known->count(name) || StorageTypes().count(name);
}

absl::StatusOr<ObjectPtr> StateDictGlobals::LoadStorage(const Object& pid) {
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
  auto storage = arena_.New(Object::Kind::kStorage);
  storage->text = key;
  storage->tensor = torch::empty({numel}, torch::TensorOptions().dtype(type_it->second));
  if (expected > 0) std::memcpy(storage->tensor.data_ptr(), bytes.get(), expected);
  storages_[key] = storage;
  return storage;
}

absl::StatusOr<ObjectPtr> StateDictGlobals::RebuildTensor(const Object& args) {
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
  auto tensor = arena_.New(Object::Kind::kTensor);
  tensor->tensor = empty ? torch::empty(sizes, storage.options())
                         : storage.as_strided(sizes, strides, offset).clone();
  return tensor;
}

absl::StatusOr<ObjectPtr> StateDictGlobals::Reduce(const Object& callable, const Object& args) {
  if (callable.kind != Object::Kind::kGlobal) {
    return Error(absl::StrCat("REDUCE calls ", KindName(callable)));
  }
  const std::string& name = callable.text;
  if (name == "collections.OrderedDict") {
    if (args.kind != Object::Kind::kTuple || !args.items.empty()) {
      return Error("collections.OrderedDict with arguments");
    }
    return arena_.New(Object::Kind::kDict);
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

}  // namespace state_dict_internal
}  // namespace pipeline
