#include "pipeline/trainer/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "caffe2/serialize/inline_container.h"
#include "pipeline/metrics/crc32c.h"
#include "pipeline/util/status_macros.h"
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

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) return absl::DataLossError(absl::StrCat(path, ": read error"));
  return bytes;
}

std::string ChecksumLine(const std::string& bytes) {
  return absl::StrFormat("crc32c %08x size %d\n", Crc32c(bytes), bytes.size());
}

// kDataLoss when the checksum file exists and `path` does not match it.
absl::Status VerifyChecksum(const std::string& path) {
  const std::string sum_path = ChecksumPathOf(path);
  std::error_code error;
  if (!std::filesystem::exists(sum_path, error)) return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::string expected, ReadWholeFile(sum_path));
  ASSIGN_OR_RETURN(const std::string bytes, ReadWholeFile(path));
  const std::string actual = ChecksumLine(bytes);
  if (actual != expected) {
    return absl::DataLossError(absl::StrCat(
        path, ": is corrupted: its checksum file ", sum_path, " says \"",
        absl::StripTrailingAsciiWhitespace(expected), "\" but the file has \"",
        absl::StripTrailingAsciiWhitespace(actual), "\""));
  }
  return absl::OkStatus();
}

// The TorchScript type of one attribute, as torch::serialize writes them:
// a few scalar types, a tensor, a nested archive, and their containers.
bool ConsumeType(absl::string_view& text, int depth = 0) {
  if (depth > 8) return false;
  for (absl::string_view scalar : {"Tensor", "int", "float", "bool", "str", "NoneType"}) {
    if (absl::ConsumePrefix(&text, scalar)) {
      // "int" must not match the start of "intx".
      return text.empty() || !(absl::ascii_isalnum(text[0]) || text[0] == '_');
    }
  }
  if (absl::ConsumePrefix(&text, "__torch__.")) {
    size_t length = 0;
    while (length < text.size() &&
           (absl::ascii_isalnum(text[length]) || text[length] == '_' || text[length] == '.')) {
      ++length;
    }
    const absl::string_view name = text.substr(0, length);
    text.remove_prefix(length);
    return name == "Module" || absl::EndsWith(name, ".Module");
  }
  for (absl::string_view generic : {"List[", "Optional[", "Tuple[", "Dict["}) {
    if (!absl::ConsumePrefix(&text, generic)) continue;
    do {
      if (!ConsumeType(text, depth + 1)) return false;
    } while (absl::ConsumePrefix(&text, ", "));
    return absl::ConsumePrefix(&text, "]");
  }
  return false;
}

bool ConsumeQuotedName(absl::string_view& text) {
  if (!absl::ConsumePrefix(&text, "\"")) return false;
  const size_t end = text.find_first_of("\"\\\n");
  if (end == absl::string_view::npos || text[end] != '"') return false;
  text.remove_prefix(end + 1);
  return true;
}

bool IsIdentifier(absl::string_view text) {
  if (text.empty() || absl::ascii_isdigit(text[0])) return false;
  for (char c : text) {
    if (!absl::ascii_isalnum(c) && c != '_') return false;
  }
  return true;
}

// One line of a class torch::serialize::OutputArchive writes:
//   class Module(Module):
//     __parameters__ = ["fc.weight", "fc.bias", ]     (or __buffers__)
//     __annotations__ = []
//     __annotations__["fc.weight"] = Tensor
//     epoch : int
bool IsArchiveClassLine(absl::string_view line) {
  if (line == "class Module(Module):" || line == "  __annotations__ = []" || line.empty()) {
    return true;
  }
  if (!absl::ConsumePrefix(&line, "  ")) return false;
  if (absl::ConsumePrefix(&line, "__parameters__ = [") ||
      absl::ConsumePrefix(&line, "__buffers__ = [")) {
    while (ConsumeQuotedName(line)) {
      if (!absl::ConsumePrefix(&line, ", ")) return false;
    }
    return line == "]";
  }
  if (absl::ConsumePrefix(&line, "__annotations__[")) {
    return ConsumeQuotedName(line) && absl::ConsumePrefix(&line, "] = ") && ConsumeType(line) &&
           line.empty();
  }
  const size_t colon = line.find(" : ");
  if (colon == absl::string_view::npos || !IsIdentifier(line.substr(0, colon))) return false;
  line.remove_prefix(colon + 3);
  return ConsumeType(line) && line.empty();
}

// A checkpoint is a TorchScript archive, and LibTorch's importer compiles
// the class definitions under code/ as TorchScript source: some damaged
// sources crash it (a segfault in ScriptTypeParser::parseClassConstant for
// a class constant with a misspelt name), which no try/catch can turn into
// an error. So before LibTorch sees a file, every source in it must be of
// the one form torch::serialize writes: attribute declarations, no code.
absl::Status CheckArchiveSources(const std::string& path) {
  absl::Status checked = CallTorch("", [&]() -> absl::Status {
    caffe2::serialize::PyTorchStreamReader reader(path);
    for (const std::string& record : reader.getAllRecords()) {
      if (!absl::StartsWith(record, "code/") || !absl::EndsWith(record, ".py")) continue;
      auto [data, size] = reader.getRecord(record);
      const absl::string_view source(static_cast<const char*>(data.get()), size);
      int number = 0;
      for (absl::string_view line : absl::StrSplit(source, '\n')) {
        ++number;
        if (!IsArchiveClassLine(line)) {
          return absl::InvalidArgumentError(absl::StrCat(
              record, " line ", number, " is not an attribute declaration train writes: \"",
              absl::CEscape(line.substr(0, 80)), "\""));
        }
      }
    }
    return absl::OkStatus();
  });
  if (!checked.ok()) {
    std::string reason(checked.message());
    if (reason.rfind(": ", 0) == 0) reason = reason.substr(2);
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": is not a checkpoint written by train (truncated or another format?): ", reason));
  }
  return absl::OkStatus();
}

}  // namespace

std::string ChecksumPathOf(const std::string& path) { return path + ".crc32c"; }

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
    archive.write("epoch_step", c10::IValue(contents.epoch_step));
    archive.write("epoch_sums", torch::tensor(contents.epoch_sums.empty()
                                                  ? std::vector<double>{0, 0, 0}
                                                  : contents.epoch_sums,
                                              torch::kDouble));
    archive.write("best_val_accuracy", c10::IValue(contents.best_val_accuracy));
    if (contents.rng_state.defined()) archive.write("rng_state", contents.rng_state);
    if (contents.grad_scale > 0) {
      archive.write("grad_scale", c10::IValue(contents.grad_scale));
      archive.write("grad_scaler_growth_tracker",
                    c10::IValue(contents.grad_scaler_growth_tracker));
    }
    archive.save_to(temporary);
  });
  if (!saved.ok()) {
    std::error_code error;
    std::filesystem::remove(temporary, error);
    return saved;
  }
  RETURN_IF_ERROR(FsyncFile(temporary));
  // The checksum file is in place before the checkpoint is, so a checkpoint
  // that exists always has one to be checked against.
  ASSIGN_OR_RETURN(const std::string bytes, ReadWholeFile(temporary));
  RETURN_IF_ERROR(WriteFileAtomically(ChecksumPathOf(path), ChecksumLine(bytes)));
  return RenameOver(temporary, path);
}

absl::Status RestoreOptimizerState(const std::string& path, Optimizer& optimizer) {
  RETURN_IF_ERROR(CheckArchiveSources(path));
  return CallTorch(absl::StrCat(path, ": restoring the optimizer state"), [&] {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    torch::serialize::InputArchive optimizer_archive;
    archive.read("optimizer", optimizer_archive);
    optimizer.load(optimizer_archive);
  });
}

absl::StatusOr<LoadedCheckpoint> ReadCheckpoint(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such checkpoint file"));
  }
  RETURN_IF_ERROR(VerifyChecksum(path));
  RETURN_IF_ERROR(CheckArchiveSources(path));
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
    // Written since exact resume; absent from older checkpoints.
    c10::IValue epoch_step, best;
    if (archive.try_read("epoch_step", epoch_step) && epoch_step.isInt()) {
      loaded.contents.epoch_step = epoch_step.toInt();
    }
    torch::Tensor sums;
    if (archive.try_read("epoch_sums", sums) && sums.numel() == 3) {
      for (int i = 0; i < 3; ++i) loaded.contents.epoch_sums.push_back(sums[i].item<double>());
    }
    if (archive.try_read("best_val_accuracy", best) && best.isDouble()) {
      loaded.contents.best_val_accuracy = best.toDouble();
    }
    torch::Tensor rng;
    if (archive.try_read("rng_state", rng)) loaded.contents.rng_state = rng;
    c10::IValue grad_scale, growth_tracker;
    if (archive.try_read("grad_scale", grad_scale) && grad_scale.isDouble() &&
        archive.try_read("grad_scaler_growth_tracker", growth_tracker) && growth_tracker.isInt()) {
      loaded.contents.grad_scale = grad_scale.toDouble();
      loaded.contents.grad_scaler_growth_tracker = growth_tracker.toInt();
    }
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

std::vector<std::string> ListCheckpoints(const std::string& dir) {
  struct Entry {
    std::filesystem::file_time_type modified;
    std::string path;
  };
  std::vector<Entry> entries;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!absl::StartsWith(name, "checkpoint_") || !absl::EndsWith(name, ".pt") ||
        name == "checkpoint_best.pt") {
      continue;
    }
    // checkpoint_step_<number>.pt or checkpoint_epoch_<number>.pt.
    const absl::string_view middle(name.data() + 11, name.size() - 14);
    int64_t number = 0;
    const bool step = absl::StartsWith(middle, "step_");
    if (!step && !absl::StartsWith(middle, "epoch_")) continue;
    if (!absl::SimpleAtoi(middle.substr(step ? 5 : 6), &number)) continue;
    entries.push_back({entry.last_write_time(error), entry.path().string()});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.modified != b.modified ? a.modified < b.modified : a.path < b.path;
  });
  std::vector<std::string> paths;
  for (const Entry& entry : entries) paths.push_back(entry.path);
  return paths;
}

std::optional<FoundCheckpoint> FindLatestCheckpoint(const std::string& dir, std::ostream* log) {
  std::optional<FoundCheckpoint> best;
  for (const std::string& path : ListCheckpoints(dir)) {
    absl::StatusOr<LoadedCheckpoint> loaded = ReadCheckpoint(path);
    if (!loaded.ok()) {
      if (log) *log << "warning: skipping " << loaded.status().message() << "\n";
      continue;
    }
    if (!best || loaded->contents.step > best->checkpoint.contents.step) {
      best = FoundCheckpoint{path, std::move(*loaded)};
    }
  }
  return best;
}

}  // namespace pipeline
