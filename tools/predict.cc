// predict: a trained model's top classes for image files.
//
//   bazel run //tools:predict -- --checkpoint=runs/single/checkpoint_epoch_2.pt photo.jpg
//   bazel run //tools:predict -- --checkpoint=... --output=csv --top_k=3 data/validation
//
// Everything comes from the checkpoint: the model (its config's model
// plugin), the weights, the class names, and the preprocessing — the
// validation transforms of its config (without validation data, the
// training transforms minus the random_* ones). Images are decoded as the
// config's image_folder dataset decodes them (JPEG or PNG, by content) and
// run in batches. A folder is searched recursively for .jpg/.jpeg/.png
// files; where an image's folder is named after a class (the ImageFolder
// layout), the summary line gives the accuracy over those images.
//
// Output, one line per image: text "path: class (probability), ..." or,
// with --output=csv, "path,predicted,probability,top2,probability2,...".
// An image that cannot be read or decoded is reported on stderr naming the
// file; the others are still predicted, and the exit status is then 1.
// Exit status: 0 all predicted, 1 some images failed, 2 bad flags or
// checkpoint.

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ATen/Parallel.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gflags/gflags.h"
#include "pipeline/data/loader.h"
#include "pipeline/interfaces/random.h"
#include "pipeline/interfaces/transform.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/util/torch_status.h"
#include "pipeline/weights/restore.h"
#include "plugins/datasets/image_folder/image_codec.h"
#include "plugins/datasets/image_folder/image_folder.pb.h"
#include "torch/csrc/autograd/grad_mode.h"

DEFINE_string(checkpoint, "", "A checkpoint written by train (checkpoint_epoch_N.pt)");
DEFINE_int32(top_k, 5, "Classes to print per image, most probable first");
DEFINE_int32(batch_size, 64, "Images per forward pass");
DEFINE_string(output, "text", "text (path: class (probability), ...) or csv");
DEFINE_int32(threads, 0, "Compute threads; 0 = one per core");

namespace pipeline {
namespace {

namespace fs = std::filesystem;

int Fail(const absl::Status& status) {
  std::cerr << "error: " << status.message() << "\n";
  return 2;
}

bool IsImageFile(const fs::path& path) {
  const std::string extension = absl::AsciiStrToLower(path.extension().string());
  return extension == ".jpg" || extension == ".jpeg" || extension == ".png";
}

// Files named on the command line as they are; folders searched for images,
// in sorted order so runs are comparable.
std::vector<std::string> CollectImages(const std::vector<std::string>& arguments,
                                       std::vector<std::string>* errors) {
  std::vector<std::string> images;
  for (const std::string& argument : arguments) {
    std::error_code error;
    if (fs::is_directory(argument, error)) {
      std::vector<std::string> found;
      for (fs::recursive_directory_iterator it(argument, error), end; !error && it != end;
           it.increment(error)) {
        if (it->is_regular_file(error) && IsImageFile(it->path())) {
          found.push_back(it->path().string());
        }
      }
      if (error) errors->push_back(absl::StrCat(argument, ": ", error.message()));
      if (found.empty())
        errors->push_back(absl::StrCat(argument, ": holds no .jpg/.jpeg/.png files"));
      std::sort(found.begin(), found.end());
      images.insert(images.end(), found.begin(), found.end());
    } else if (fs::exists(argument, error)) {
      images.push_back(argument);
    } else {
      errors->push_back(absl::StrCat(argument, ": no such file or folder"));
    }
  }
  return images;
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
  std::vector<std::unique_ptr<Transform>> transforms;
  DecodeOptions decode;
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
    if (!validation && transform.name().rfind("random_", 0) == 0) continue;
    auto created = Registry<Transform>::Global().Create(transform, {});
    if (!created.ok()) {
      return absl::Status(created.status().code(),
                          absl::StrCat(FLAGS_checkpoint, ": ", validation ? "validation" : "train",
                                       "_data.transforms[", i, "]: ", created.status().message()));
    }
    preprocessing.transforms.push_back(std::move(*created));
  }
  // Decode as the run's image_folder dataset did (its `color` option).
  if (data.dataset().name() == "image_folder") {
    ImageFolderOptions options;
    if (data.dataset().options().UnpackTo(&options)) {
      switch (options.color()) {
        case ImageFolderOptions::GRAY: preprocessing.decode.color = DecodeOptions::GRAY; break;
        case ImageFolderOptions::RGB: preprocessing.decode.color = DecodeOptions::RGB; break;
        default: break;
      }
    }
  }
  for (const auto& [name, tensor] : restored.checkpoint.model) {
    if (tensor.dim() == 4) {
      preprocessing.channels = tensor.size(1);
      break;
    }
  }
  preprocessing.seed = config.trainer().seed();
  return preprocessing;
}

absl::Status ApplyTransforms(const Preprocessing& preprocessing, int64_t index, Image& image) {
  SampleRandom random(preprocessing.seed, 0, static_cast<uint64_t>(index));
  for (const auto& transform : preprocessing.transforms) {
    if (absl::Status status = transform->Apply(image, random); !status.ok()) return status;
  }
  return absl::OkStatus();
}

// Decoded and transformed, or an error naming the file.
absl::StatusOr<Image> Load(const Preprocessing& preprocessing, const std::string& path,
                           int64_t index) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot open the file"));
  const std::string bytes((std::istreambuf_iterator<char>(file)), {});
  auto image = DecodeImage(bytes, path, preprocessing.decode);
  if (!image.ok()) return image.status();
  Image decoded = *image;
  if (absl::Status status = ApplyTransforms(preprocessing, index, *image); !status.ok()) {
    return absl::Status(status.code(), absl::StrCat(path, ": ", status.message()));
  }
  if (image->channels == preprocessing.channels || preprocessing.channels == 0) return image;
  // A colour photo for a model trained on gray images, or the reverse:
  // decode again with the model's channel count.
  if (preprocessing.channels == 1 || preprocessing.channels == 3) {
    DecodeOptions forced;
    forced.color = preprocessing.channels == 1 ? DecodeOptions::GRAY : DecodeOptions::RGB;
    auto again = DecodeImage(bytes, path, forced);
    if (!again.ok()) return again.status();
    if (absl::Status status = ApplyTransforms(preprocessing, index, *again); !status.ok()) {
      return absl::Status(status.code(), absl::StrCat(path, ": ", status.message()));
    }
    if (again->channels == preprocessing.channels) return again;
  }
  return absl::InvalidArgumentError(absl::StrCat(path, ": has ", image->channels,
                                                 " channels after the transforms; the model "
                                                 "takes ",
                                                 preprocessing.channels));
}

struct Tally {
  int64_t predicted = 0;
  int64_t failed = 0;
  int64_t labelled = 0;  // in a folder named after a class
  int64_t correct = 0;
};

class Predictor {
 public:
  Predictor(RestoredModel& restored, bool csv, int top_k)
      : restored_(restored),
        csv_(csv),
        classes_(restored.checkpoint.contents.class_names),
        top_k_(std::min<int64_t>(top_k, static_cast<int64_t>(classes_.size()))),
        class_set_(classes_.begin(), classes_.end()) {}

  void PrintHeader() {
    if (!csv_) return;
    std::cout << "path,predicted,probability";
    for (int64_t k = 2; k <= top_k_; ++k) std::cout << ",top" << k << ",probability" << k;
    std::cout << "\n";
  }

  // Queues one loaded image; a batch runs when full or when the next image
  // has another size (a batch is one tensor).
  absl::Status Add(const std::string& path, Image image) {
    if (!pending_.empty() &&
        (image.height != pending_[0].image.height || image.width != pending_[0].image.width ||
         image.channels != pending_[0].image.channels)) {
      RETURN_IF_ERROR(Flush());
    }
    pending_.push_back({path, std::move(image)});
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
      const std::string folder = fs::path(path).parent_path().filename().string();
      if (class_set_.count(folder)) {
        ++tally_.labelled;
        if (classes_[indices[i][0].item<int64_t>()] == folder) ++tally_.correct;
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
  };
  RestoredModel& restored_;
  const bool csv_;
  const std::vector<std::string>& classes_;
  const int64_t top_k_;
  const std::set<std::string> class_set_;
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

  std::vector<std::string> errors;
  const std::vector<std::string> images =
      CollectImages(std::vector<std::string>(argv + 1, argv + argc), &errors);
  for (const std::string& error : errors) std::cerr << "error: " << error << "\n";

  Predictor predictor(*restored, FLAGS_output == "csv", FLAGS_top_k);
  predictor.PrintHeader();
  Tally& tally = predictor.tally();
  for (size_t i = 0; i < images.size(); ++i) {
    auto image = Load(*preprocessing, images[i], static_cast<int64_t>(i));
    absl::Status status = image.ok() ? predictor.Add(images[i], std::move(*image)) : image.status();
    if (!image.ok()) {
      std::cerr << "error: " << status.message() << "\n";
      ++tally.failed;
    } else if (!status.ok()) {
      return Fail(status);  // the model itself failed: no point going on
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
  return tally.failed > 0 || !errors.empty() ? 1 : 0;
}

}  // namespace
}  // namespace pipeline

int main(int argc, char** argv) { return pipeline::Main(argc, argv); }
