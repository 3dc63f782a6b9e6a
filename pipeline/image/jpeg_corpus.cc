#include "pipeline/image/jpeg_corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "pipeline/image/image_codec.h"
#include "pipeline/image/image_ops.h"
#include "pipeline/interfaces/image.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;

// Averages 2x2 blocks: downscaling by halves first keeps the final bilinear
// step within 2x, so the crops are not aliased (aliasing adds detail that
// real photos do not have and makes the files larger).
Image HalveDown(const Image& image) {
  Image half;
  half.height = image.height / 2;
  half.width = image.width / 2;
  half.channels = image.channels;
  half.u8.resize(static_cast<size_t>(half.height) * half.width * half.channels);
  const int c = image.channels;
  for (int y = 0; y < half.height; ++y) {
    for (int x = 0; x < half.width; ++x) {
      for (int k = 0; k < c; ++k) {
        auto at = [&](int yy, int xx) {
          return image.u8[(static_cast<size_t>(yy) * image.width + xx) * c + k];
        };
        const int sum = at(2 * y, 2 * x) + at(2 * y, 2 * x + 1) + at(2 * y + 1, 2 * x) +
                        at(2 * y + 1, 2 * x + 1);
        half.u8[(static_cast<size_t>(y) * half.width + x) * c + k] =
            static_cast<uint8_t>((sum + 2) / 4);
      }
    }
  }
  return half;
}

absl::StatusOr<std::vector<Image>> ReadSources(const std::string& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    return absl::NotFoundError(absl::StrCat(
        "source_dir ", dir, " is not a folder; install the photographs with "
        "`apt-get install mate-backgrounds` or pass a folder of JPEG photos"));
  }
  std::vector<fs::path> paths;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string extension = absl::AsciiStrToLower(entry.path().extension().string());
    if (entry.is_regular_file() && (extension == ".jpg" || extension == ".jpeg")) {
      paths.push_back(entry.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  std::vector<Image> sources;
  for (const fs::path& path : paths) {
    std::ifstream file(path, std::ios::binary);
    std::stringstream bytes;
    bytes << file.rdbuf();
    DecodeOptions decode;
    decode.color = DecodeOptions::RGB;
    absl::StatusOr<Image> image = DecodeImage(bytes.str(), path.string(), decode);
    if (!image.ok()) return image.status();
    sources.push_back(std::move(*image));
  }
  if (sources.empty()) {
    return absl::NotFoundError(absl::StrCat("source_dir ", dir, " holds no .jpg photographs"));
  }
  return sources;
}

}  // namespace

absl::StatusOr<int> MakeJpegCorpus(const JpegCorpusOptions& options) {
  absl::StatusOr<std::vector<Image>> sources = ReadSources(options.source_dir);
  if (!sources.ok()) return sources.status();
  std::mt19937_64 random(options.seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  int written = 0;
  for (const std::string& name : options.classes) {
    const fs::path folder = fs::path(options.output_dir) / name;
    std::error_code error;
    fs::create_directories(folder, error);
    if (error) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create ", folder.string(), ": ", error.message()));
    }
    for (int i = 0; i < options.images_per_class; ++i) {
      const Image& source = (*sources)[random() % sources->size()];
      const bool portrait = uniform(random) < 0.25;
      const int out_h = portrait ? options.width : options.height;
      const int out_w = portrait ? options.height : options.width;
      // A crop of 15% to 60% of the photo's area, at the output's aspect.
      const double area = source.height * static_cast<double>(source.width) *
                          (0.15 + 0.45 * uniform(random));
      const double aspect = static_cast<double>(out_w) / out_h;
      image_ops::Region region;
      region.width = std::min(source.width, static_cast<int>(std::sqrt(area * aspect)));
      region.height = std::min(source.height, static_cast<int>(region.width / aspect));
      region.top = static_cast<int>(uniform(random) * (source.height - region.height));
      region.left = static_cast<int>(uniform(random) * (source.width - region.width));
      absl::StatusOr<Image> crop = image_ops::Crop(source, region);
      if (!crop.ok()) return crop.status();
      Image reduced = std::move(*crop);
      while (reduced.height >= 2 * out_h && reduced.width >= 2 * out_w) {
        reduced = HalveDown(reduced);
      }
      absl::StatusOr<Image> resized =
          image_ops::Resize(reduced, out_h, out_w, image_ops::Interpolation::kBilinear);
      if (!resized.ok()) return resized.status();
      if (uniform(random) < 0.5) image_ops::FlipHorizontal(*resized);
      absl::StatusOr<std::string> jpeg = EncodeJpeg(*resized, options.quality);
      if (!jpeg.ok()) return jpeg.status();
      const fs::path path = folder / absl::StrCat(i, ".jpg");
      std::ofstream out(path, std::ios::binary);
      out << *jpeg;
      if (!out) return absl::DataLossError(absl::StrCat("cannot write ", path.string()));
      ++written;
    }
  }
  return written;
}

}  // namespace pipeline
