#ifndef PIPELINE_IMAGE_IDX_READER_H_
#define PIPELINE_IMAGE_IDX_READER_H_

// Reader for the idx format of MNIST and Fashion-MNIST
// (http://yann.lecun.com/exdb/mnist/): a big-endian header (magic, sizes)
// followed by raw uint8 data; `.gz` files are decompressed on the fly.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace pipeline {

struct IdxImages {
  int64_t count = 0;
  int rows = 0;
  int cols = 0;
  // count * rows * cols bytes, image after image.
  std::vector<uint8_t> pixels;
};

// Reads an idx3-ubyte file of images (magic 0x00000803), gzip-compressed or not.
absl::StatusOr<IdxImages> ReadIdxImages(const std::string& path);

// Reads an idx1-ubyte file of labels (magic 0x00000801), gzip-compressed or not.
absl::StatusOr<std::vector<uint8_t>> ReadIdxLabels(const std::string& path);

// Parses an idx file already in memory; `path` only names it in errors.
absl::StatusOr<IdxImages> ParseIdxImages(const std::string& bytes, const std::string& path);
absl::StatusOr<std::vector<uint8_t>> ParseIdxLabels(const std::string& bytes,
                                                    const std::string& path);

// Fashion-MNIST's class names, by label (file-name safe: "T-shirt_top").
const std::vector<std::string>& FashionMnistClassNames();

// The whole file, gunzipped when it starts with the gzip magic.
absl::StatusOr<std::string> ReadMaybeGzippedFile(const std::string& path);

// `raw` gunzipped when it starts with the gzip magic, else `raw` itself;
// `path` only names it in errors.
absl::StatusOr<std::string> GunzipIfCompressed(std::string raw, const std::string& path);

}  // namespace pipeline

#endif  // PIPELINE_IMAGE_IDX_READER_H_
