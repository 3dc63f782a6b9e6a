#include "pipeline/checkpoint/checkpoint.h"

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
#include "pipeline/checkpoint/archive_check.h"
#include "pipeline/util/crc32c.h"
#include "pipeline/util/durable_file.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/util/torch_status.h"
#include "torch/serialize/input-archive.h"
#include "torch/serialize/output-archive.h"

namespace pipeline {
namespace {

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
