#include "pipeline/trainer/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "pipeline/util/torch_status.h"
#include "torch/serialize/input-archive.h"
#include "torch/serialize/output-archive.h"

namespace pipeline {
namespace {

absl::Status FsyncFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return absl::InternalError(absl::StrCat(path, ": ", std::strerror(errno)));
  const int result = ::fsync(fd);
  ::close(fd);
  if (result != 0) return absl::InternalError(absl::StrCat(path, ": fsync: ", std::strerror(errno)));
  return absl::OkStatus();
}

absl::Status RenameOver(const std::string& from, const std::string& to) {
  std::error_code error;
  std::filesystem::rename(from, to, error);
  if (error) {
    std::filesystem::remove(from, error);
    return absl::InternalError(absl::StrCat("renaming ", from, " to ", to, ": ", error.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  FILE* file = std::fopen(temporary.c_str(), "wb");
  if (file == nullptr) {
    return absl::InternalError(absl::StrCat("cannot write ", temporary, ": ", std::strerror(errno)));
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  const bool flushed = std::fflush(file) == 0 && ::fsync(fileno(file)) == 0;
  std::fclose(file);
  if (!written || !flushed) {
    std::remove(temporary.c_str());
    return absl::InternalError(absl::StrCat("writing ", temporary, " failed (disk full?)"));
  }
  return RenameOver(temporary, path);
}

absl::Status WriteCheckpoint(const std::string& path, Model& model, Optimizer& optimizer,
                             const CheckpointContents& contents) {
  const std::string temporary = path + ".tmp";
  absl::Status saved = CallTorch("writing checkpoint " + path, [&] {
    torch::serialize::OutputArchive archive;
    torch::serialize::OutputArchive model_archive;
    for (const auto& parameter : model.named_parameters()) {
      model_archive.write(parameter.key(), parameter.value());
    }
    for (const auto& buffer : model.named_buffers()) {
      model_archive.write(buffer.key(), buffer.value(), /*is_buffer=*/true);
    }
    archive.write("model", model_archive);
    torch::serialize::OutputArchive optimizer_archive;
    optimizer.save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);
    archive.write("epoch", c10::IValue(contents.epoch));
    archive.write("step", c10::IValue(contents.step));
    archive.write("class_names", c10::IValue(absl::StrJoin(contents.class_names, "\n")));
    archive.write("config", c10::IValue(contents.resolved_config));
    archive.save_to(temporary);
  });
  if (!saved.ok()) {
    std::error_code error;
    std::filesystem::remove(temporary, error);
    return saved;
  }
  if (absl::Status status = FsyncFile(temporary); !status.ok()) return status;
  return RenameOver(temporary, path);
}

absl::StatusOr<LoadedCheckpoint> ReadCheckpoint(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such checkpoint file"));
  }
  LoadedCheckpoint loaded;
  auto read = CallTorch("", [&]() -> absl::Status {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    torch::serialize::InputArchive model_archive;
    if (!archive.try_read("model", model_archive)) {
      return absl::InvalidArgumentError("holds no model weights");
    }
    // Attributes come back in the order they were written; "training" and
    // the like are not tensors and are left out.
    for (const std::string& key : model_archive.keys()) {
      c10::IValue value;
      model_archive.read(key, value);
      if (value.isTensor()) loaded.model.emplace_back(key, value.toTensor());
    }
    c10::IValue epoch, step, class_names, config;
    if (!archive.try_read("epoch", epoch) || !archive.try_read("step", step) ||
        !archive.try_read("class_names", class_names) || !archive.try_read("config", config) ||
        !epoch.isInt() || !step.isInt() || !class_names.isString() || !config.isString()) {
      return absl::InvalidArgumentError("lacks the epoch, step, class names or config");
    }
    loaded.contents.epoch = epoch.toInt();
    loaded.contents.step = step.toInt();
    const std::string names = class_names.toStringRef();
    if (!names.empty()) loaded.contents.class_names = absl::StrSplit(names, '\n');
    loaded.contents.resolved_config = config.toStringRef();
    return absl::OkStatus();
  });
  if (!read.ok()) {
    std::string reason(read.message());
    if (reason.rfind(": ", 0) == 0) reason = reason.substr(2);
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": is not a checkpoint written by train (truncated or another format?): ", reason));
  }
  return loaded;
}

}  // namespace pipeline
