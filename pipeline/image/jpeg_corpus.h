#ifndef PIPELINE_IMAGE_JPEG_CORPUS_H_
#define PIPELINE_IMAGE_JPEG_CORPUS_H_

// A JPEG ImageFolder that decodes like a real photo dataset: crops of real
// photographs (Debian's mate-backgrounds package) at the size and quality of
// the cats-vs-dogs images. Synthetic noise or flat images decode at speeds no
// real dataset has, so the benchmark reads these instead.

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace pipeline {

struct JpegCorpusOptions {
  // Folder of source photographs (*.jpg).
  std::string source_dir = "/usr/share/backgrounds/mate/nature";
  // Written as <output_dir>/<class>/<index>.jpg.
  std::string output_dir;
  std::vector<std::string> classes = {"cat", "dog"};
  int images_per_class = 500;
  // Landscape size; about one in four images is portrait (height x width
  // swapped), as in the cats-vs-dogs set.
  int width = 500;
  int height = 375;
  int quality = 75;
  uint64_t seed = 1;
};

// Writes the corpus; returns the number of images written. Existing files of
// the same names are replaced.
absl::StatusOr<int> MakeJpegCorpus(const JpegCorpusOptions& options);

}  // namespace pipeline

#endif  // PIPELINE_IMAGE_JPEG_CORPUS_H_
