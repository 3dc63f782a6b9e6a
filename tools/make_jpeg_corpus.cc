// Writes a JPEG ImageFolder of real-photo crops for the benchmark:
//   bazel run //tools:make_jpeg_corpus -- --output_dir=/tmp/jpeg_corpus
#include <iostream>

#include "gflags/gflags.h"
#include "pipeline/image/jpeg_corpus.h"

DEFINE_string(output_dir, "", "folder to write <class>/<index>.jpg into");
DEFINE_string(source_dir, "/usr/share/backgrounds/mate/nature",
              "folder of source photographs (.jpg)");
DEFINE_int32(images_per_class, 500, "images per class (2 classes: cat, dog)");
DEFINE_int32(quality, 75, "JPEG quality, 1..100");

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_output_dir.empty()) {
    std::cerr << "error: --output_dir is required\n";
    return 2;
  }
  pipeline::JpegCorpusOptions options;
  options.output_dir = FLAGS_output_dir;
  options.source_dir = FLAGS_source_dir;
  options.images_per_class = FLAGS_images_per_class;
  options.quality = FLAGS_quality;
  absl::StatusOr<int> written = pipeline::MakeJpegCorpus(options);
  if (!written.ok()) {
    std::cerr << "error: " << written.status().message() << "\n";
    return 2;
  }
  std::cerr << "wrote " << *written << " JPEGs to " << FLAGS_output_dir << "\n";
  return 0;
}
