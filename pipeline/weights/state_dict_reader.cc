#include "pipeline/weights/state_dict_reader.h"

#include <algorithm>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "caffe2/serialize/inline_container.h"
#include "pipeline/checkpoint/checkpoint.h"
#include "pipeline/util/durable_file.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/util/torch_status.h"
#include "pipeline/weights/pickle_object.h"
#include "pipeline/weights/safetensors.h"
#include "pipeline/weights/unpickler.h"
#include "torch/serialize.h"

// The zip container (caffe2's PyTorchStreamReader) is opened here, data.pkl
// is run by the Unpickler (unpickler.h), and the state dict is found in the
// object it makes.

namespace pipeline {
namespace {

using state_dict_internal::KindName;
using state_dict_internal::Object;
using state_dict_internal::ObjectPtr;
using state_dict_internal::Unpickler;

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
  if (IsSafetensorsFile(path)) {
    ASSIGN_OR_RETURN(SafetensorsContents contents, ReadSafetensors(path));
    return std::move(contents.tensors);
  }
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
