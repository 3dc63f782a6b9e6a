// predict: a trained model's top classes for image files.
//
//   bazel run //tools:predict -- --checkpoint=runs/single/checkpoint_epoch_2.pt photo.jpg
//   bazel run //tools:predict -- --checkpoint=... --output=csv --top_k=3 data/validation
//
// Everything comes from the checkpoint: the model (its config's model
// plugin), the weights, the class names, and the preprocessing — the
// validation transforms of its config (without validation data, the
// training transforms minus those that declare themselves training_only),
// and the reading of files: the config's own dataset reads the files and
// folders named (DatasetContext::inference), as it read its data in
// training, and says which images a folder holds and which class an image
// belongs to where it can tell. Images run in batches; for those whose class
// is known, the summary line gives the accuracy.
//
// Output, one line per image: text "path: class (probability), ..." or,
// with --output=csv, "path,predicted,probability,top2,probability2,...".
// An image that cannot be read or decoded is reported on stderr naming the
// file; the others are still predicted, and the exit status is then 1.
// Exit status: 0 all predicted, 1 some images failed, 2 bad flags or
// checkpoint.

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ATen/Parallel.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gflags/gflags.h"
#include "pipeline/data/loader.h"
#include "pipeline/interfaces/dataset.h"
#include "pipeline/interfaces/random.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/registry/registry.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/util/torch_status.h"
#include "pipeline/weights/restore.h"
#include "torch/csrc/autograd/grad_mode.h"

DEFINE_string(checkpoint, "", "A checkpoint written by train (checkpoint_epoch_N.pt)");
DEFINE_int32(top_k, 5, "Classes to print per image, most probable first");
DEFINE_int32(batch_size, 64, "Images per forward pass");
DEFINE_string(output, "text", "text (path: class (probability), ...) or csv");
DEFINE_int32(threads, 0, "Compute threads; 0 = one per core");

namespace pipeline {
namespace {

int Fail(const absl::Status& status) {
  std::cerr << "error: " << status.message() << "\n";
  return 2;
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

// How the checkpoint's run turned files into model inputs.
struct Preprocessing {
  PluginConfig dataset;  // reads the images
  std::vector<std::unique_ptr<Transform>> transforms;
  std::vector<std::string> class_names;
  int64_t channels = 0;  // what the model's stem takes
  uint64_t seed = 0;
};

absl::StatusOr<Preprocessing> PreprocessingOf(const RestoredModel& restored) {
  Preprocessing preprocessing;
  const PipelineConfig& config = restored.config;
  const bool validation = config.has_validation_data();
  const DataConfig& data = validation ? config.validation_data() : config.train_data();
  for (int i = 0; i < data.transforms_size(); ++i) {
    const PluginConfig& transform = data.transforms(i);
    // Training augmentation has no place in inference.
    if (!validation && Registry<Transform>::Global().TraitsOf(transform.name()).training_only) {
      continue;
    }
    auto created = Registry<Transform>::Global().Create(transform, {});
    if (!created.ok()) {
      return absl::Status(created.status().code(),
                          absl::StrCat(FLAGS_checkpoint, ": ", validation ? "validation" : "train",
                                       "_data.transforms[", i, "]: ", created.status().message()));
    }
    preprocessing.transforms.push_back(std::move(*created));
  }
  preprocessing.dataset = data.dataset();
  if (!Registry<Dataset>::Global().TraitsOf(data.dataset().name()).reads_inference_input) {
    return absl::UnimplementedError(absl::StrCat(
        FLAGS_checkpoint, ": ", validation ? "validation" : "train", "_data.dataset: dataset \"",
        data.dataset().name(), "\" cannot read the image files given for inference"));
  }
  preprocessing.class_names = restored.checkpoint.contents.class_names;
  for (const auto& [name, tensor] : restored.checkpoint.model) {
    if (tensor.dim() == 4) {
      preprocessing.channels = tensor.size(1);
      break;
    }
  }
  preprocessing.seed = config.trainer().seed();
  return preprocessing;
}

// The checkpoint's dataset reading `path` (a file or a folder), decoding to
// `channels` (0: as its options say).
absl::StatusOr<std::unique_ptr<Dataset>> DatasetOver(const Preprocessing& preprocessing,
                                                     const std::string& path, int channels) {
  DatasetContext context;
  context.split = "inference";
  context.seed = preprocessing.seed;
  context.inference = InferenceInput{{path}, preprocessing.class_names, channels};
  return Registry<Dataset>::Global().Create(preprocessing.dataset, context);
}

// The transforms, with errors naming the file.
absl::Status ApplyTransforms(const Preprocessing& preprocessing, const std::string& path,
                             int64_t index, Image& image) {
  SampleRandom random(preprocessing.seed, 0, static_cast<uint64_t>(index));
  for (const auto& transform : preprocessing.transforms) {
    if (absl::Status status = transform->Apply(image, random); !status.ok()) {
      return absl::Status(status.code(), absl::StrCat(path, ": ", status.message()));
    }
  }
  return absl::OkStatus();
}

// Sample `index` of `dataset`, read and transformed, or an error naming the
// file. `seed_index` numbers it among all images, for random transforms.
absl::StatusOr<Sample> Load(const Preprocessing& preprocessing, const Dataset& dataset,
                            int64_t index, int64_t seed_index) {
  const std::string path = dataset.SampleName(index);
  ASSIGN_OR_RETURN(Sample sample, dataset.Get(index));
  RETURN_IF_ERROR(ApplyTransforms(preprocessing, path, seed_index, sample.image));
  if (sample.image.channels == preprocessing.channels || preprocessing.channels == 0) {
    return sample;
  }
  // A colour photo for a model trained on gray images, or the reverse: the
  // dataset reads the file again, decoding to the model's channel count.
  if (preprocessing.channels == 1 || preprocessing.channels == 3) {
    ASSIGN_OR_RETURN(std::unique_ptr<Dataset> file,
                     DatasetOver(preprocessing, path, static_cast<int>(preprocessing.channels)));
    if (file->size() == 1) {
      ASSIGN_OR_RETURN(Sample again, file->Get(0));
      RETURN_IF_ERROR(ApplyTransforms(preprocessing, path, seed_index, again.image));
      if (again.image.channels == preprocessing.channels) return again;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(path, ": has ", sample.image.channels,
                                                 " channels after the transforms; the model "
                                                 "takes ",
                                                 preprocessing.channels));
}

struct Tally {
  int64_t predicted = 0;
  int64_t failed = 0;
  int64_t labelled = 0;  // whose class the dataset could tell
  int64_t correct = 0;
};

class Predictor {
 public:
  Predictor(RestoredModel& restored, bool csv, int top_k)
      : restored_(restored),
        csv_(csv),
        classes_(restored.checkpoint.contents.class_names),
        top_k_(std::min<int64_t>(top_k, static_cast<int64_t>(classes_.size()))) {}

  void PrintHeader() {
    if (!csv_) return;
    std::cout << "path,predicted,probability";
    for (int64_t k = 2; k <= top_k_; ++k) std::cout << ",top" << k << ",probability" << k;
    std::cout << "\n";
  }

  // Queues one loaded image (its label kUnknownLabel when its class is not
  // known); a batch runs when full or when the next image has another size
  // (a batch is one tensor).
  absl::Status Add(const std::string& path, Sample sample) {
    Image& image = sample.image;
    if (!pending_.empty() &&
        (image.height != pending_[0].image.height || image.width != pending_[0].image.width ||
         image.channels != pending_[0].image.channels)) {
      RETURN_IF_ERROR(Flush());
    }
    pending_.push_back({path, std::move(image), sample.label});
    if (static_cast<int>(pending_.size()) >= FLAGS_batch_size) return Flush();
    return absl::OkStatus();
  }

  absl::Status Flush() {
    if (pending_.empty()) return absl::OkStatus();
    const Image& first = pending_[0].image;
    const int64_t n = static_cast<int64_t>(pending_.size());
    torch::Tensor batch = torch::empty({n, first.channels, first.height, first.width});
    const int64_t stride = static_cast<int64_t>(first.channels) * first.height * first.width;
    for (int64_t i = 0; i < n; ++i)
      WriteChw(pending_[i].image, batch.data_ptr<float>() + i * stride);
    auto result = CallTorch("running the model", [&] {
      c10::InferenceMode inference;
      return torch::softmax(restored_.model->forward(batch), 1).topk(top_k_, 1);
    });
    if (!result.ok()) {
      pending_.clear();
      return result.status();
    }
    const torch::Tensor probabilities = std::get<0>(*result).contiguous();
    const torch::Tensor indices = std::get<1>(*result).contiguous();
    for (int64_t i = 0; i < n; ++i) {
      const std::string& path = pending_[i].path;
      std::vector<std::string> fields;
      for (int64_t k = 0; k < top_k_; ++k) {
        const std::string& name = classes_[indices[i][k].item<int64_t>()];
        const double probability = probabilities[i][k].item<double>();
        fields.push_back(csv_ ? absl::StrFormat("%s,%.6f", CsvField(name), probability)
                              : absl::StrFormat("%s (%.4f)", name, probability));
      }
      std::cout << (csv_ ? CsvField(path) : path) << (csv_ ? "," : ": ")
                << absl::StrJoin(fields, csv_ ? "," : ", ") << "\n";
      ++tally_.predicted;
      const int64_t label = pending_[i].label;
      if (label >= 0 && label < static_cast<int64_t>(classes_.size())) {
        ++tally_.labelled;
        if (indices[i][0].item<int64_t>() == label) ++tally_.correct;
      }
    }
    pending_.clear();
    return absl::OkStatus();
  }

  Tally& tally() { return tally_; }

 private:
  struct Pending {
    std::string path;
    Image image;
    int64_t label = kUnknownLabel;
  };
  RestoredModel& restored_;
  const bool csv_;
  const std::vector<std::string>& classes_;
  const int64_t top_k_;
  std::vector<Pending> pending_;
  Tally tally_;
};

int Main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "Prints a trained model's most probable classes for images.\n"
      "  predict --checkpoint=<checkpoint_epoch_N.pt> [--top_k=5] [--batch_size=64] "
      "[--output=text|csv] <image or folder>...");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  // `bazel run` starts the binary in its runfiles; relative paths mean the
  // folder bazel was called from.
  const char* working_dir = std::getenv("BUILD_WORKING_DIRECTORY");
  if (working_dir != nullptr && *working_dir != '\0' && ::chdir(working_dir) != 0) {
    return Fail(absl::InternalError(absl::StrCat("cannot enter ", working_dir)));
  }
  if (FLAGS_checkpoint.empty()) {
    return Fail(absl::InvalidArgumentError("--checkpoint: empty; name a checkpoint of train"));
  }
  if (FLAGS_output != "text" && FLAGS_output != "csv") {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--output: \"", FLAGS_output, "\"; choose text or csv")));
  }
  if (FLAGS_top_k < 1) return Fail(absl::InvalidArgumentError("--top_k: must be at least 1"));
  if (FLAGS_batch_size < 1) {
    return Fail(absl::InvalidArgumentError("--batch_size: must be at least 1"));
  }
  if (argc < 2) {
    return Fail(absl::InvalidArgumentError("no images given; name image files or folders"));
  }
  at::set_num_threads(FLAGS_threads > 0
                          ? FLAGS_threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));

  auto restored = RestoreModel(FLAGS_checkpoint);
  if (!restored.ok()) return Fail(restored.status());
  auto preprocessing = PreprocessingOf(*restored);
  if (!preprocessing.ok()) return Fail(preprocessing.status());

  Predictor predictor(*restored, FLAGS_output == "csv", FLAGS_top_k);
  predictor.PrintHeader();
  Tally& tally = predictor.tally();
  // One dataset per file or folder named, so that one that cannot be read
  // (missing, no images) is reported and the others still predicted.
  int64_t unreadable_arguments = 0;
  int64_t seed_index = 0;
  for (int a = 1; a < argc; ++a) {
    auto dataset = DatasetOver(*preprocessing, argv[a], /*channels=*/0);
    if (!dataset.ok()) {
      std::cerr << "error: " << dataset.status().message() << "\n";
      ++unreadable_arguments;
      continue;
    }
    for (int64_t i = 0; i < (*dataset)->size(); ++i, ++seed_index) {
      auto sample = Load(*preprocessing, **dataset, i, seed_index);
      absl::Status status = sample.ok()
                                ? predictor.Add((*dataset)->SampleName(i), std::move(*sample))
                                : sample.status();
      if (!sample.ok()) {
        std::cerr << "error: " << status.message() << "\n";
        ++tally.failed;
      } else if (!status.ok()) {
        return Fail(status);  // the model itself failed: no point going on
      }
    }
  }
  if (absl::Status status = predictor.Flush(); !status.ok()) return Fail(status);

  std::string summary = absl::StrCat("predicted ", tally.predicted, " images");
  if (tally.failed > 0) absl::StrAppend(&summary, "; ", tally.failed, " could not be read");
  if (tally.labelled > 0) {
    absl::StrAppend(&summary, absl::StrFormat("; accuracy %.2f%% (%d of %d images in folders named "
                                              "after a class)",
                                              100.0 * tally.correct / tally.labelled, tally.correct,
                                              tally.labelled));
  }
  std::cerr << summary << "\n";
  return tally.failed > 0 || unreadable_arguments > 0 ? 1 : 0;
}

}  // namespace
}  // namespace pipeline

int main(int argc, char** argv) { return pipeline::Main(argc, argv); }
