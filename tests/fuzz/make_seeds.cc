// Writes the binary seed inputs of the fuzz targets under the folder given
// as the only argument (tests/fuzz/corpus): small valid files of every kind
// each reader accepts, and a few broken ones (truncated, wrong magic), so
// that mutation starts from both sides of every check.
//
//   bazel run //tests/fuzz:make_seeds -- $PWD/tests/fuzz/corpus
//
// Every file comes out the same each run but checkpoint_*.pt: LibTorch
// names an optimizer's parameters by their addresses in memory.

#include <png.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "pipeline/checkpoint/checkpoint.h"
#include "pipeline/image/image_codec.h"
#include "pipeline/image/libpng_writer.h"
#include "pipeline/interfaces/model.h"
#include "pipeline/weights/safetensors.h"
#include "pipeline/weights/state_dict_reader.h"
#include "torch/nn/modules/linear.h"
#include "torch/optim/sgd.h"

namespace pipeline {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
  std::printf("%s: %zu bytes\n", path.c_str(), bytes.size());
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string BigEndian32(uint32_t value) {
  return {static_cast<char>(value >> 24), static_cast<char>(value >> 16),
          static_cast<char>(value >> 8), static_cast<char>(value)};
}

std::string Gzip(const std::string& bytes) {
  z_stream stream{};
  // 16 + MAX_WBITS: a gzip wrapper, as the .gz files of the datasets have.
  deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&stream, bytes.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

void IdxSeeds(const fs::path& dir) {
  std::string images = BigEndian32(0x803) + BigEndian32(3) + BigEndian32(4) + BigEndian32(5);
  for (int i = 0; i < 3 * 4 * 5; ++i) images.push_back(static_cast<char>(i * 7));
  std::string labels = BigEndian32(0x801) + BigEndian32(3) + std::string("\x00\x09\x04", 3);
  Write(dir / "images_3x4x5.idx", images);
  Write(dir / "labels_3.idx", labels);
  Write(dir / "images_3x4x5.idx.gz", Gzip(images));
  Write(dir / "labels_3.idx.gz", Gzip(labels));
  Write(dir / "images_none_28x28.idx",
        BigEndian32(0x803) + BigEndian32(0) + BigEndian32(28) + BigEndian32(28));
  Write(dir / "images_truncated.idx", images.substr(0, images.size() - 9));
  Write(dir / "labels_bad_magic.idx", BigEndian32(0x802) + labels.substr(4));
  const std::string gz = Gzip(images);
  Write(dir / "images_truncated.idx.gz", gz.substr(0, gz.size() / 2));
}

Image Pattern(int height, int width, int channels) {
  Image image;
  image.height = height;
  image.width = width;
  image.channels = channels;
  for (int i = 0; i < height * width * channels; ++i) image.u8.push_back(static_cast<uint8_t>(i * 37));
  return image;
}


void ImageSeeds(const fs::path& dir) {
  const std::string gray_png = *EncodePng(Pattern(7, 5, 1));
  const std::string rgb_png = *EncodePng(Pattern(4, 6, 3));
  const std::string rgb_jpeg = *EncodeJpeg(Pattern(8, 16, 3), 50);
  Write(dir / "gray_7x5.png", gray_png);
  Write(dir / "rgb_4x6.png", rgb_png);
  Write(dir / "gray_8x8.jpg", *EncodeJpeg(Pattern(8, 8, 1), 75));
  Write(dir / "rgb_8x16_q50_420.jpg", rgb_jpeg);
  Write(dir / "rgb_9x17_q95_444.jpg", *EncodeJpeg(Pattern(9, 17, 3), 95));
  const Image rgba = Pattern(3, 5, 4);
  Write(dir / "rgba_3x5.png", EncodePngWithLibpng(5, 3, PNG_FORMAT_RGBA, rgba.u8.data()));
  std::vector<uint16_t> gray16(4 * 4);
  for (size_t i = 0; i < gray16.size(); ++i) gray16[i] = static_cast<uint16_t>(i * 4099);
  Write(dir / "gray16_4x4.png", EncodePngWithLibpng(4, 4, PNG_FORMAT_LINEAR_Y, gray16.data()));
  const uint8_t palette[] = {0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255};
  std::vector<uint8_t> indices(6 * 6);
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<uint8_t>(i % 4);
  Write(dir / "palette_6x6.png",
        EncodePngWithLibpng(6, 6, PNG_FORMAT_RGB_COLORMAP, indices.data(), palette, 4));
  Write(dir / "rgb_truncated.png", rgb_png.substr(0, rgb_png.size() * 2 / 3));
  Write(dir / "rgb_truncated.jpg", rgb_jpeg.substr(0, rgb_jpeg.size() * 2 / 3));
}

class Tiny : public Model {
 public:
  Tiny() { fc_ = register_module("fc", torch::nn::Linear(3, 2)); }
  torch::Tensor forward(const torch::Tensor& images) override { return fc_(images); }

 private:
  torch::nn::Linear fc_{nullptr};
};

void WeightsSeeds(const fs::path& dir) {
  fs::create_directories(dir);
  torch::manual_seed(1);
  Tiny model;
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  CheckpointContents contents{/*epoch=*/1, /*step=*/4, {"cat", "dog"}, "trainer { epochs: 1 }"};
  contents.epoch_sums = {1.5, 3, 4};
  const fs::path checkpoint = dir / "checkpoint_tiny.pt";
  if (absl::Status status = WriteCheckpoint(checkpoint, model, optimizer, contents); !status.ok()) {
    std::fprintf(stderr, "%s\n", std::string(status.message()).c_str());
    std::exit(1);
  }
  // The checksum file would make every mutation a checksum error.
  fs::remove(ChecksumPathOf(checkpoint));
  const std::string checkpoint_bytes = ReadAll(checkpoint);
  std::printf("%s: %zu bytes\n", checkpoint.c_str(), checkpoint_bytes.size());
  Write(dir / "checkpoint_truncated.pt", checkpoint_bytes.substr(0, checkpoint_bytes.size() / 2));

  NamedTensors tensors;
  for (const auto& item : model.named_parameters()) tensors.emplace_back(item.key(), item.value());
  tensors.emplace_back("counts", torch::arange(4, torch::kInt64));
  const fs::path state_dict = dir / "state_dict_tiny.pt";
  if (absl::Status status = WriteStateDict(state_dict, tensors); !status.ok()) {
    std::fprintf(stderr, "%s\n", std::string(status.message()).c_str());
    std::exit(1);
  }
  std::printf("%s: %zu bytes\n", state_dict.c_str(), fs::file_size(state_dict));
  // A zip archive with no entries: only the end-of-central-directory record.
  Write(dir / "empty_zip.pt", std::string("PK\x05\x06", 4) + std::string(18, '\0'));
}

// Every dtype the reader takes, metadata, an empty tensor; then the same
// cut short, and a header alone.
void SafetensorsSeeds(const fs::path& dir) {
  const NamedTensors tensors = {
      {"conv.weight", torch::arange(8, torch::kFloat).reshape({2, 1, 2, 2}) / 4},
      {"bn.num_batches_tracked", torch::tensor(int64_t{5})},
      {"bn.running_var", torch::tensor({0.5, 2.0}).to(torch::kHalf)},
      {"fc.bias", torch::tensor({1.5, -3.0}).to(torch::kBFloat16)},
      {"scale", torch::tensor({0.25}, torch::kDouble)},
      {"index", torch::tensor({-1, 2}, torch::kInt)},
      {"mask", torch::tensor({true, false})},
      {"pixels", torch::tensor({0, 255}).to(torch::kByte)},
      {"empty", torch::zeros({0, 3})},
  };
  auto bytes = SafetensorsBytes(tensors, {{"format", "pt"}, {"note", "seed \u00e9"}});
  if (!bytes.ok()) {
    std::fprintf(stderr, "%s\n", std::string(bytes.status().message()).c_str());
    std::exit(1);
  }
  Write(dir / "mixed.safetensors", *bytes);
  Write(dir / "mixed_truncated.safetensors", bytes->substr(0, bytes->size() - 5));
  auto single = SafetensorsBytes({{"w", torch::ones({2, 2})}}, {});
  Write(dir / "single_f32.safetensors", *single);
}

}  // namespace
}  // namespace pipeline

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds <corpus folder, e.g. $PWD/tests/fuzz/corpus>\n");
    return 2;
  }
  const std::filesystem::path corpus = argv[1];
  pipeline::IdxSeeds(corpus / "idx_reader");
  pipeline::ImageSeeds(corpus / "image_codec");
  pipeline::WeightsSeeds(corpus / "state_dict_reader");
  pipeline::SafetensorsSeeds(corpus / "safetensors_reader");
  return 0;
}
