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

// `path` could not be written (`error_number` is its errno): kResourceExhausted
// for a full disk or quota, which freeing space cures, kInternal otherwise.
// Both end `train` with exit status 1.
absl::Status WriteError(const std::string& path, int error_number) {
  const std::string message =
      absl::StrCat("cannot write ", path, ": ", std::strerror(error_number));
  return error_number == ENOSPC || error_number == EDQUOT ? absl::ResourceExhaustedError(message)
                                                          : absl::InternalError(message);
}

// A new file written through its descriptor, whose first failed write is
// kept (with its errno) for Finish. Write always reports every byte taken:
// LibTorch's archive writer, handed a short count (a full disk), throws
// again from its destructor, which ends the process; told nothing, it
// finishes, and the error comes out of Finish instead.
class SyncedFile {
 public:
  // Errors name `name` (the file the caller is making), not the temporary.
  SyncedFile(const std::string& path, std::string name)
      : name_(std::move(name)),
        fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) {
    if (fd_ < 0) error_ = errno;
  }
  ~SyncedFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  SyncedFile(const SyncedFile&) = delete;
  SyncedFile& operator=(const SyncedFile&) = delete;

  size_t Write(const void* data, size_t size) {
    const char* bytes = static_cast<const char*>(data);
    for (size_t done = 0; error_ == 0 && done < size;) {
      const ssize_t written = ::write(fd_, bytes + done, size - done);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) {
        error_ = written < 0 ? errno : EIO;
        break;
      }
      done += static_cast<size_t>(written);
    }
    return size;
  }

  // On disk and closed, or the first error on the way (a network file
  // system may only report it at fsync or close).
  absl::Status Finish() {
    if (error_ == 0 && ::fsync(fd_) != 0) error_ = errno;
    if (fd_ >= 0 && ::close(fd_) != 0 && error_ == 0) error_ = errno;
    fd_ = -1;
    return error_ == 0 ? absl::OkStatus() : WriteError(name_, error_);
  }

 private:
  const std::string name_;
  int fd_;
  int error_ = 0;
};

// Renames `from` over `to`, then flushes their folder, so the new name is on
// disk before anything (keep_last) removes an older checkpoint. `from` is
// removed when the rename fails.
absl::Status RenameOver(const std::string& from, const std::string& to) {
  std::error_code error;
  std::filesystem::rename(from, to, error);
  if (error) {
    const absl::StatusCode code = WriteError(to, error.value()).code();
    const std::string reason = error.message();
    std::filesystem::remove(from, error);
    return absl::Status(code, absl::StrCat("cannot rename ", from, " to ", to, ": ", reason));
  }
  const std::string dir = std::filesystem::path(to).parent_path().string();
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    // Some file systems cannot flush a folder (EINVAL); the rename stands.
    const bool flushed = ::fsync(fd) == 0 || errno == EINVAL;
    const int error_number = errno;
    ::close(fd);
    if (!flushed) return WriteError(dir, error_number);
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
  unsigned crc = 0;
  long long size = 0;
  char end = 0;
  if (std::sscanf(expected.c_str(), "crc32c %8x size %lld%c", &crc, &size, &end) != 3 ||
      end != '\n') {
    // Torn or emptied after the fact (it is written whole before the
    // checkpoint is renamed into place): nothing left to check against.
    return absl::DataLossError(absl::StrCat(
        path, ": its checksum file ", sum_path, " is damaged (it holds \"",
        absl::CEscape(absl::StripTrailingAsciiWhitespace(expected.substr(0, 40))),
        "\"), so the checkpoint cannot be trusted"));
  }
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

// The tensors of a nested archive, in the order they were written.
std::vector<std::pair<std::string, torch::Tensor>> TensorsOf(
    torch::serialize::InputArchive& archive) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const std::string& key : archive.keys()) {
    c10::IValue value;
    archive.read(key, value);
    if (value.isTensor()) tensors.emplace_back(key, value.toTensor());
  }
  return tensors;
}

// What only some runs write: the EMA average and hooks' state.
void ReadOptionalParts(torch::serialize::InputArchive& archive, CheckpointContents& contents) {
  torch::serialize::InputArchive ema;
  if (archive.try_read("ema", ema)) contents.ema = TensorsOf(ema);
  torch::serialize::InputArchive states;
  if (!archive.try_read("states", states)) return;
  for (auto& [name, tensor] : TensorsOf(states)) {
    const torch::Tensor values = tensor.to(torch::kDouble).contiguous().view(-1);
    contents.states[name].assign(values.data_ptr<double>(),
                                 values.data_ptr<double>() + values.numel());
  }
}

}  // namespace

std::string ChecksumPathOf(const std::string& path) { return path + ".crc32c"; }

absl::Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  SyncedFile file(temporary, path);
  file.Write(text.data(), text.size());
  if (absl::Status written = file.Finish(); !written.ok()) {
    std::error_code error;
    std::filesystem::remove(temporary, error);
    return written;
  }
  return RenameOver(temporary, path);
}

absl::Status CheckDirectoryWritable(const std::string& dir) {
  std::error_code error;
  std::filesystem::path existing = std::filesystem::absolute(dir, error);
  // A path through a regular file does not exist either (ENOTDIR): the
  // walk stops at that file, and the probe below names the reason.
  while (!std::filesystem::exists(existing, error) && existing.has_relative_path()) {
    existing = existing.parent_path();
  }
  std::string probe = (existing / ".train_write_check_XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    const int error_number = errno;
    const bool missing = existing != std::filesystem::absolute(dir, error);
    return absl::FailedPreconditionError(
        absl::StrCat("output_dir: ", missing ? absl::StrCat("cannot create ", dir, ": ") : "",
                     "cannot write in ", missing ? existing.string() : dir, ": ",
                     std::strerror(error_number)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return absl::OkStatus();
}

absl::Status WriteCheckpoint(const std::string& path, Model& model, Optimizer& optimizer,
                             const CheckpointContents& contents) {
  const std::string temporary = path + ".tmp";
  SyncedFile file(temporary, path);
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
    archive.write("epoch_samples_per_rank", c10::IValue(contents.epoch_samples_per_rank));
    archive.write("world_size", c10::IValue(contents.world_size));
    archive.write("epoch_sums", torch::tensor(contents.epoch_sums.empty()
                                                  ? std::vector<double>{0, 0}
                                                  : contents.epoch_sums,
                                              torch::kDouble));
    archive.write("best_val_accuracy", c10::IValue(contents.best_value));
    if (contents.rng_state.defined()) archive.write("rng_state", contents.rng_state);
    if (contents.grad_scale > 0) {
      archive.write("grad_scale", c10::IValue(contents.grad_scale));
      archive.write("grad_scaler_growth_tracker",
                    c10::IValue(contents.grad_scaler_growth_tracker));
    }
    if (!contents.ema.empty()) {
      torch::serialize::OutputArchive ema_archive;
      for (const auto& [name, tensor] : contents.ema) ema_archive.write(name, tensor);
      archive.write("ema", ema_archive);
    }
    if (!contents.states.empty()) {
      torch::serialize::OutputArchive states_archive;
      for (const auto& [name, values] : contents.states) {
        states_archive.write(name, torch::tensor(values, torch::kDouble));
      }
      archive.write("states", states_archive);
    }
    archive.save_to([&file](const void* data, size_t size) { return file.Write(data, size); });
  });
  // A write error is the cause of whatever else went wrong after it.
  if (absl::Status finished = file.Finish(); !finished.ok()) saved = finished;
  std::string previous_sum;
  if (saved.ok()) {
    // The checksum file is in place before the checkpoint is, so a
    // checkpoint that exists always has one to be checked against; the one
    // of a checkpoint this replaces comes back if the rename fails.
    auto bytes = ReadWholeFile(temporary);
    previous_sum = ReadWholeFile(ChecksumPathOf(path)).value_or("");
    saved = bytes.ok() ? WriteFileAtomically(ChecksumPathOf(path), ChecksumLine(*bytes))
                       : bytes.status();
  }
  if (!saved.ok()) {
    std::error_code error;
    std::filesystem::remove(temporary, error);
    return saved;
  }
  absl::Status renamed = RenameOver(temporary, path);
  if (!renamed.ok()) {
    std::error_code error;
    if (previous_sum.empty()) {
      std::filesystem::remove(ChecksumPathOf(path), error);
    } else {
      WriteFileAtomically(ChecksumPathOf(path), previous_sum).IgnoreError();
    }
  }
  return renamed;
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
    c10::IValue samples_per_rank, world_size;
    if (archive.try_read("epoch_samples_per_rank", samples_per_rank) && samples_per_rank.isInt() &&
        archive.try_read("world_size", world_size) && world_size.isInt()) {
      loaded.contents.epoch_samples_per_rank = samples_per_rank.toInt();
      loaded.contents.world_size = world_size.toInt();
    }
    torch::Tensor sums;
    if (archive.try_read("epoch_sums", sums) && sums.dim() == 1) {
      const torch::Tensor values = sums.to(torch::kDouble).contiguous();
      loaded.contents.epoch_sums.assign(values.data_ptr<double>(),
                                        values.data_ptr<double>() + values.numel());
    }
    if (archive.try_read("best_val_accuracy", best) && best.isDouble() && best.toDouble() != -1) {
      loaded.contents.best_value = best.toDouble();
    }
    torch::Tensor rng;
    if (archive.try_read("rng_state", rng)) loaded.contents.rng_state = rng;
    c10::IValue grad_scale, growth_tracker;
    if (archive.try_read("grad_scale", grad_scale) && grad_scale.isDouble() &&
        archive.try_read("grad_scaler_growth_tracker", growth_tracker) && growth_tracker.isInt()) {
      loaded.contents.grad_scale = grad_scale.toDouble();
      loaded.contents.grad_scaler_growth_tracker = growth_tracker.toInt();
    }
    ReadOptionalParts(archive, loaded.contents);
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
