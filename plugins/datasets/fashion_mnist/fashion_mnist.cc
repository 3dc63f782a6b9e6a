// dataset `fashion_mnist`: Fashion-MNIST (or MNIST) from its idx files, read
// once into memory as uint8 28x28x1 images (47 MB for the training set), so
// Get() is a copy of 784 bytes.
//
//   train_data {
//     dataset {
//       name: "fashion_mnist"
//       options { [type.googleapis.com/pipeline.FashionMnistOptions] { split: TRAIN } }
//     }
//   }

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "pipeline/image/idx_reader.h"
#include "pipeline/interfaces/dataset.h"
#include "plugins/datasets/fashion_mnist/fashion_mnist.pb.h"

namespace pipeline {
namespace {

// "<root>/<stem>.gz" if present, else "<root>/<stem>".
absl::StatusOr<std::string> FindIdxFile(const std::string& root, const std::string& stem) {
  std::error_code error;
  if (!std::filesystem::is_directory(root, error)) {
    return absl::NotFoundError(absl::StrCat(
        "root: folder ", root, " does not exist; install the dataset-fashion-mnist package "
        "(tools/setup.sh does) or set root to a folder holding ", stem, "(.gz)"));
  }
  for (const std::string& name : {stem + ".gz", stem}) {
    const std::string path = (std::filesystem::path(root) / name).string();
    if (std::filesystem::exists(path, error)) return path;
  }
  return absl::NotFoundError(
      absl::StrCat("root: ", root, " holds no ", stem, ".gz or ", stem));
}

class FashionMnistDataset : public Dataset {
 public:
  FashionMnistDataset(IdxImages images, std::vector<uint8_t> labels,
                      std::vector<std::string> class_names)
      : images_(std::move(images)),
        labels_(std::move(labels)),
        class_names_(std::move(class_names)) {}

  int64_t size() const override { return images_.count; }

  absl::StatusOr<Sample> Get(int64_t index) const override {
    if (index < 0 || index >= size()) {
      return absl::OutOfRangeError(absl::StrCat("sample ", index, " of ", size()));
    }
    Sample sample;
    sample.image.height = images_.rows;
    sample.image.width = images_.cols;
    sample.image.channels = 1;
    const size_t bytes = static_cast<size_t>(images_.rows) * images_.cols;
    const uint8_t* begin = images_.pixels.data() + bytes * index;
    sample.image.u8.assign(begin, begin + bytes);
    sample.label = labels_[index];
    return sample;
  }

  const std::vector<std::string>& class_names() const override { return class_names_; }

 private:
  IdxImages images_;
  std::vector<uint8_t> labels_;
  std::vector<std::string> class_names_;
};

absl::StatusOr<std::unique_ptr<Dataset>> CreateFashionMnist(const FashionMnistOptions& options,
                                                            const DatasetContext& context) {
  if (context.inference) {
    return absl::UnimplementedError(
        "reads its own idx files only, not the image files named for inference");
  }
  const bool train = options.has_split() ? options.split() == FashionMnistOptions::TRAIN
                                         : context.split == "train";
  const std::string prefix = train ? "train" : "t10k";
  auto images_path = FindIdxFile(options.root(), prefix + "-images-idx3-ubyte");
  if (!images_path.ok()) return images_path.status();
  auto labels_path = FindIdxFile(options.root(), prefix + "-labels-idx1-ubyte");
  if (!labels_path.ok()) return labels_path.status();
  auto images = ReadIdxImages(*images_path);
  if (!images.ok()) return images.status();
  auto labels = ReadIdxLabels(*labels_path);
  if (!labels.ok()) return labels.status();
  if (static_cast<int64_t>(labels->size()) != images->count) {
    return absl::DataLossError(absl::StrCat(*images_path, " holds ", images->count,
                                            " images but ", *labels_path, " holds ",
                                            labels->size(), " labels"));
  }
  std::vector<std::string> class_names(options.class_names().begin(),
                                       options.class_names().end());
  if (class_names.empty()) {
    if (absl::StrContains(absl::AsciiStrToLower(options.root()), "fashion")) {
      class_names = FashionMnistClassNames();
    } else {
      for (int i = 0; i < 10; ++i) class_names.push_back(absl::StrCat(i));
    }
  }
  for (size_t i = 0; i < labels->size(); ++i) {
    if ((*labels)[i] >= class_names.size()) {
      return absl::DataLossError(absl::StrCat(*labels_path, ": label ", int{(*labels)[i]},
                                              " of sample ", i, " but only ",
                                              class_names.size(), " class names"));
    }
  }
  if (options.limit() > 0 && options.limit() < images->count) {
    images->count = options.limit();
    images->pixels.resize(static_cast<size_t>(images->count) * images->rows * images->cols);
    labels->resize(images->count);
  }
  return std::make_unique<FashionMnistDataset>(std::move(*images), std::move(*labels),
                                               std::move(class_names));
}

absl::Status ValidateFashionMnist(const FashionMnistOptions& options) {
  if (options.limit() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("limit: ", options.limit(),
                                                   " is negative; use 0 for all samples"));
  }
  return absl::OkStatus();
}

PIPELINE_REGISTER_PLUGIN(Dataset, "fashion_mnist", FashionMnistOptions,
                         "Fashion-MNIST/MNIST idx files, in memory as 28x28x1 uint8",
                         CreateFashionMnist, ValidateFashionMnist);

}  // namespace
}  // namespace pipeline
