#include "pipeline/image/image_codec.h"

#include <png.h>
#include <turbojpeg.h>
#include <zlib.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/image/libpng_writer.h"

namespace pipeline {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A smooth ramp (JPEG reproduces it closely) that differs per channel.
Image Pattern(int height, int width, int channels) {
  Image image;
  image.height = height;
  image.width = width;
  image.channels = channels;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        image.u8.push_back(static_cast<uint8_t>(20 + x * 150 / width + y * 50 / height + c * 15));
      }
    }
  }
  return image;
}

// Noise compresses badly, so the headers are a small part of the file and
// cutting it in half cuts the pixel data.
Image Noise(int height, int width, int channels) {
  Image image = Pattern(height, width, channels);
  uint32_t state = 12345;
  for (uint8_t& v : image.u8) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<uint8_t>(state >> 24);
  }
  return image;
}

double MeanAbsDiff(const Image& a, const Image& b) {
  double total = 0;
  for (size_t i = 0; i < a.u8.size(); ++i) total += std::abs(a.u8[i] - b.u8[i]);
  return total / a.u8.size();
}

// Fails the test when libpng refuses the image.
std::string WritePngWithLibpng(int width, int height, uint32_t format, const void* pixels,
                               const void* colormap = nullptr, int colormap_entries = 0) {
  std::string bytes =
      EncodePngWithLibpng(width, height, format, pixels, colormap, colormap_entries);
  EXPECT_FALSE(bytes.empty()) << "libpng could not write the test image";
  return bytes;
}

TEST(ImageCodecTest, PngRoundTripIsExact) {
  for (int channels : {1, 3}) {
    const Image original = Pattern(7, 9, channels);
    auto png = EncodePng(original);
    ASSERT_TRUE(png.ok()) << png.status();
    auto decoded = DecodeImage(*png, "x.png");
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->ShapeString(), original.ShapeString());
    EXPECT_EQ(decoded->u8, original.u8);
  }
}

TEST(ImageCodecTest, JpegRoundTripIsClose) {
  for (int channels : {1, 3}) {
    const Image original = Pattern(32, 40, channels);
    for (int quality : {75, 95}) {
      auto jpeg = EncodeJpeg(original, quality);
      ASSERT_TRUE(jpeg.ok()) << jpeg.status();
      auto decoded = DecodeImage(*jpeg, "x.jpg");
      ASSERT_TRUE(decoded.ok()) << decoded.status();
      EXPECT_EQ(decoded->ShapeString(), original.ShapeString());
      EXPECT_LT(MeanAbsDiff(*decoded, original), quality >= 90 ? 2.0 : 5.0)
          << channels << " channels, quality " << quality;
    }
  }
}

TEST(ImageCodecTest, ColorConversions) {
  const Image rgb = Pattern(4, 5, 3);
  const Image gray = Pattern(4, 5, 1);
  for (const std::string& bytes : {*EncodePng(rgb), *EncodeJpeg(rgb, 95)}) {
    EXPECT_EQ(DecodeImage(bytes, "c", {DecodeOptions::KEEP})->channels, 3);
    EXPECT_EQ(DecodeImage(bytes, "c", {DecodeOptions::RGB})->channels, 3);
    EXPECT_EQ(DecodeImage(bytes, "c", {DecodeOptions::GRAY})->channels, 1);
  }
  for (const std::string& bytes : {*EncodePng(gray), *EncodeJpeg(gray, 95)}) {
    EXPECT_EQ(DecodeImage(bytes, "g", {DecodeOptions::KEEP})->channels, 1);
    EXPECT_EQ(DecodeImage(bytes, "g", {DecodeOptions::GRAY})->channels, 1);
    auto as_rgb = DecodeImage(bytes, "g", {DecodeOptions::RGB});
    ASSERT_EQ(as_rgb->channels, 3);
    EXPECT_EQ(as_rgb->u8[0], as_rgb->u8[1]);
    EXPECT_EQ(as_rgb->u8[1], as_rgb->u8[2]);
  }
  // PNG gray from RGB is PIL's convert("L") exactly.
  auto luma = DecodeImage(*EncodePng(rgb), "c", {DecodeOptions::GRAY});
  for (size_t i = 0; i < luma->u8.size(); ++i) {
    const uint8_t* p = &rgb.u8[3 * i];
    EXPECT_EQ(luma->u8[i], (p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
  }
  // RGB back to gray replicated pixels: no change.
  auto replicated = DecodeImage(*EncodePng(gray), "g", {DecodeOptions::RGB});
  auto back = DecodeImage(*EncodePng(*replicated), "g", {DecodeOptions::GRAY});
  EXPECT_EQ(back->u8, gray.u8);
}

TEST(ImageCodecTest, RgbaPngDropsAlpha) {
  const std::vector<uint8_t> rgba = {10, 20, 30, 0, 40, 50, 60, 128, 70, 80, 90, 255};
  auto image = DecodeImage(WritePngWithLibpng(3, 1, PNG_FORMAT_RGBA, rgba.data()), "a.png");
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->ShapeString(), "1x3x3");
  // Colours as stored, not composited: a fully transparent pixel keeps them.
  EXPECT_EQ(image->u8, (std::vector<uint8_t>{10, 20, 30, 40, 50, 60, 70, 80, 90}));

  const std::vector<uint8_t> gray_alpha = {100, 0, 200, 255};
  auto gray = DecodeImage(WritePngWithLibpng(2, 1, PNG_FORMAT_GA, gray_alpha.data()), "ga.png");
  ASSERT_TRUE(gray.ok()) << gray.status();
  EXPECT_EQ(gray->ShapeString(), "1x2x1");
  EXPECT_EQ(gray->u8, (std::vector<uint8_t>{100, 200}));
}

TEST(ImageCodecTest, PalettePngBecomesRgb) {
  // Colour map with a transparent entry, so the file carries tRNS too.
  const std::vector<uint8_t> colormap = {255, 0, 0, 255, 0, 0, 255, 0};
  const std::vector<uint8_t> indices = {0, 1, 1, 0};
  auto image = DecodeImage(
      WritePngWithLibpng(2, 2, PNG_FORMAT_RGBA_COLORMAP, indices.data(), colormap.data(), 2),
      "p.png");
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->ShapeString(), "2x2x3");
  EXPECT_EQ(image->u8[0], 255);  // red
  EXPECT_EQ(image->u8[5], 255);  // blue, despite alpha 0
}

TEST(ImageCodecTest, SixteenBitPngIsScaledTo8Bit) {
  // The simplified writer writes PNG_FORMAT_LINEAR_Y as a 16-bit gray PNG.
  const std::vector<uint16_t> pixels = {0, 128 * 257, 65535};
  auto image =
      DecodeImage(WritePngWithLibpng(3, 1, PNG_FORMAT_LINEAR_Y, pixels.data()), "16.png");
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->ShapeString(), "1x3x1");
  EXPECT_EQ(image->u8, (std::vector<uint8_t>{0, 128, 255}));
}

TEST(ImageCodecTest, SixteenBitRgbaPngIsScaledAndLosesAlpha) {
  // PNG_FORMAT_LINEAR_RGB_ALPHA is written as a 16-bit RGBA PNG.
  const std::vector<uint16_t> pixels = {65535, 0, 128 * 257, 0, 0, 65535, 65535, 65535};
  const std::string png = WritePngWithLibpng(2, 1, PNG_FORMAT_LINEAR_RGB_ALPHA, pixels.data());
  ASSERT_EQ(png[24], 16);  // IHDR bit depth
  ASSERT_EQ(png[25], 6);   // IHDR colour type: RGB + alpha
  auto image = DecodeImage(png, "16rgba.png");
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->ShapeString(), "1x2x3");
  // The opaque pixel keeps its colour (the transparent one's depends on how
  // the simplified writer stores premultiplied data, so it is not checked).
  EXPECT_EQ(image->u8[3], 0);
  EXPECT_EQ(image->u8[4], 255);
  EXPECT_EQ(image->u8[5], 255);
}

TEST(ImageCodecTest, CmykJpegBecomesRgb) {
  // Left half CMYK (200, 100, 50, 255) = RGB (200, 100, 50) in Adobe's
  // inverted convention; right half K = 128 on full C, M, Y = RGB 128 gray.
  const int width = 16, height = 8;
  std::vector<uint8_t> cmyk;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const std::vector<uint8_t> p = x < 8 ? std::vector<uint8_t>{200, 100, 50, 255}
                                           : std::vector<uint8_t>{255, 255, 255, 128};
      cmyk.insert(cmyk.end(), p.begin(), p.end());
    }
  }
  tjhandle handle = tjInitCompress();
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  ASSERT_EQ(tjCompress2(handle, cmyk.data(), width, 0, height, TJPF_CMYK, &buffer, &size,
                        TJSAMP_444, 100, 0),
            0)
      << tjGetErrorStr2(handle);
  const std::string jpeg(reinterpret_cast<char*>(buffer), size);
  tjFree(buffer);
  tjDestroy(handle);

  auto image = DecodeImage(jpeg, "cmyk.jpg");
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->ShapeString(), "8x16x3");
  const uint8_t* left = &image->u8[(4 * width + 2) * 3];
  const uint8_t* right = &image->u8[(4 * width + 13) * 3];
  EXPECT_NEAR(left[0], 200, 3);
  EXPECT_NEAR(left[1], 100, 3);
  EXPECT_NEAR(left[2], 50, 3);
  EXPECT_NEAR(right[0], 128, 3);
  EXPECT_NEAR(right[2], 128, 3);
  EXPECT_EQ(DecodeImage(jpeg, "cmyk.jpg", {DecodeOptions::GRAY})->channels, 1);
}

TEST(ImageCodecTest, EmptyFile) {
  EXPECT_EQ(DecodeImage("", "data/cat/0.jpg").status().message(),
            "data/cat/0.jpg: empty file (0 bytes); expected a JPEG or PNG image");
}

TEST(ImageCodecTest, TextFileNamedJpg) {
  EXPECT_EQ(DecodeImage("this is not an image\n", "notes.jpg").status().message(),
            "notes.jpg: unknown image format (starts with \"this is \", which looks like "
            "text); supported formats: JPEG, PNG");
  EXPECT_EQ(DecodeImage(std::string("\x00\x01\x02\x03\xfe\xff\x10\x20\x30", 9), "x.png")
                .status()
                .message(),
            "x.png: unknown image format (starts with bytes 00 01 02 03 fe ff 10 20); "
            "supported formats: JPEG, PNG");
}

TEST(ImageCodecTest, OtherImageFormatsAreNamed) {
  // The first bytes of real files of each kind, saved under a .jpg name.
  std::string bmp = "BM" + std::string(12, '\0');
  bmp += std::string("\x28\x00\x00\x00", 4);  // BITMAPINFOHEADER, 40 bytes
  bmp += std::string(40, '\0');
  const std::vector<std::pair<std::string, std::string>> files = {
      {std::string("GIF89a\x01\x00\x01\x00\x80\x00\x00", 13), "GIF"},
      {std::string("GIF87a\x01\x00\x01\x00", 10), "GIF"},
      {bmp, "BMP"},
      {std::string("RIFF\x24\x00\x00\x00WEBPVP8 ", 16), "WebP"},
      {std::string("II*\x00\x08\x00\x00\x00", 8), "TIFF"},
      {std::string("MM\x00*\x00\x00\x00\x08", 8), "TIFF"},
      {std::string("\x00\x00\x00\x18" "ftypheic\x00\x00\x00\x00", 16), "HEIF"},
      {std::string("\x00\x00\x00\x1c" "ftypavif\x00\x00\x00\x00", 16), "AVIF"},
  };
  for (const auto& [bytes, format] : files) {
    auto image = DecodeImage(bytes, "photo.jpg");
    EXPECT_EQ(image.status().code(), absl::StatusCode::kUnimplemented) << format;
    EXPECT_EQ(image.status().message(),
              "photo.jpg: " + format +
                  " image (whatever its name says), which is not supported; supported formats: "
                  "JPEG, PNG. Convert it (e.g. ImageMagick's `convert in.gif out.png`) or "
                  "remove it");
  }
  // Text that happens to start with "BM" is still text.
  EXPECT_THAT(std::string(DecodeImage("BMW parts list, 2024 edition\n", "bmw.jpg")
                              .status()
                              .message()),
              HasSubstr("unknown image format (starts with \"BMW part\""));
}

// A JPEG of `image` (1, 3 or 4 = CMYK channels) written with TurboJPEG's
// full set of chroma subsamplings and flags.
std::string TurboJpeg(const Image& image, int subsampling, int flags) {
  tjhandle handle = tjInitCompress();
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const int format = image.channels == 1 ? TJPF_GRAY : image.channels == 4 ? TJPF_CMYK : TJPF_RGB;
  const int result = tjCompress2(handle, image.u8.data(), image.width, 0, image.height, format,
                                 &buffer, &size, subsampling, 75, flags);
  EXPECT_EQ(result, 0) << tjGetErrorStr2(handle);
  std::string bytes(reinterpret_cast<const char*>(buffer), size);
  tjFree(buffer);
  tjDestroy(handle);
  return bytes;
}

// Decoding only a region skips most of the inverse DCT, upsampling and
// colour conversion; what it returns must be, bit for bit, the whole
// decode's pixels in that region: for every chroma subsampling, progressive
// files, gray and CMYK files, the colour options, and regions touching any
// edge or a block boundary.
TEST(ImageCodecTest, RegionDecodeGivesTheWholeDecodesPixelsThere) {
  struct Kind {
    std::string name;
    int channels;
    int subsampling;
    int flags;
  };
  const std::vector<Kind> kinds = {
      {"4:4:4", 3, TJSAMP_444, 0},          {"4:2:2", 3, TJSAMP_422, 0},
      {"4:2:0", 3, TJSAMP_420, 0},          {"4:4:0", 3, TJSAMP_440, 0},
      {"4:1:1", 3, TJSAMP_411, 0},          {"4:2:0 progressive", 3, TJSAMP_420, TJFLAG_PROGRESSIVE},
      {"gray", 1, TJSAMP_GRAY, 0},          {"CMYK", 4, TJSAMP_420, 0},
  };
  uint32_t state = 99;
  auto below = [&](int n) {
    state = state * 1664525u + 1013904223u;
    return static_cast<int>((state >> 8) % static_cast<uint32_t>(n));
  };
  for (auto [height, width] : {std::pair{61, 83}, {375, 500}, {16, 17}}) {
    for (const Kind& kind : kinds) {
      // Texture in every channel, so chroma upsampling has edges to smooth.
      Image original = Pattern(height, width, kind.channels);
      const Image noise = Noise(height, width, kind.channels);
      for (size_t i = 0; i < original.u8.size(); ++i) {
        original.u8[i] = static_cast<uint8_t>(original.u8[i] / 2 + noise.u8[i] / 2);
      }
      const std::string jpeg = TurboJpeg(original, kind.subsampling, kind.flags);
      for (DecodeOptions::Color color :
           {DecodeOptions::KEEP, DecodeOptions::RGB, DecodeOptions::GRAY}) {
        auto whole = DecodeImage(jpeg, "x.jpg", {color});
        ASSERT_TRUE(whole.ok()) << whole.status();
        for (int trial = 0; trial < 40; ++trial) {
          ImageRegion wanted;
          wanted.height = 1 + below(height);
          wanted.width = 1 + below(width);
          wanted.top = trial % 4 == 0 ? 0 : below(height - wanted.height + 1);
          wanted.left = trial % 4 == 1 ? width - wanted.width : below(width - wanted.width + 1);
          if (trial % 4 == 2) wanted.left = (wanted.left / 16) * 16;
          int planned_height = 0, planned_width = 0;
          ImageRegion at;
          auto part = DecodeImageRegion(
              jpeg, "x.jpg", {color},
              [&](int h, int w) {
                planned_height = h;
                planned_width = w;
                return wanted;
              },
              &at);
          ASSERT_TRUE(part.ok()) << part.status();
          ASSERT_EQ(planned_height, height);
          ASSERT_EQ(planned_width, width);
          ASSERT_EQ(part->channels, whole->channels);
          ASSERT_EQ(at.height, wanted.height);
          ASSERT_EQ(at.width, wanted.width);
          ASSERT_GE(at.top, 0);
          ASSERT_GE(at.left, 0);
          ASSERT_LE(at.top + at.height, part->height);
          ASSERT_LE(at.left + at.width, part->width);
          ASSERT_EQ(part->u8.size(), part->pixel_count() * part->channels);
          const int channels = whole->channels;
          for (int y = 0; y < wanted.height; ++y) {
            for (int x = 0; x < wanted.width; ++x) {
              for (int c = 0; c < channels; ++c) {
                const uint8_t expected =
                    whole->u8[((static_cast<size_t>(wanted.top + y)) * width + wanted.left + x) *
                                  channels + c];
                const uint8_t got =
                    part->u8[((static_cast<size_t>(at.top + y)) * part->width + at.left + x) *
                                 channels + c];
                ASSERT_EQ(got, expected)
                    << kind.name << " " << height << "x" << width << " color " << color
                    << " region " << wanted.height << "x" << wanted.width << " at " << wanted.top
                    << "," << wanted.left << ": pixel " << y << "," << x << "," << c;
              }
            }
          }
        }
      }
    }
  }
}

TEST(ImageCodecTest, ARegionDecodeOfACutFileFailsAsTheWholeDecodeDoes) {
  const std::string jpeg = *EncodeJpeg(Noise(64, 64, 3), 90);
  const std::string half = jpeg.substr(0, jpeg.size() / 2);
  ImageRegion at;
  // The top rows alone are all in the half that is there.
  auto top = DecodeImageRegion(
      half, "half.jpg", {}, [](int, int width) { return ImageRegion{0, 0, 8, width}; }, &at);
  EXPECT_EQ(top.status().message(),
            "half.jpg: truncated or corrupt JPEG (libjpeg: Premature end of JPEG file)");
}

TEST(ImageCodecTest, TruncatedJpeg) {
  const std::string jpeg = *EncodeJpeg(Noise(64, 64, 3), 90);
  auto image = DecodeImage(jpeg.substr(0, jpeg.size() / 2), "half.jpg");
  EXPECT_EQ(image.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(std::string(image.status().message()),
            "half.jpg: truncated or corrupt JPEG (libjpeg: Premature end of JPEG file)");
  // Cut inside the header, before the image size.
  EXPECT_EQ(DecodeImage(jpeg.substr(0, 20), "header.jpg").status().message(),
            "header.jpg: truncated or corrupt JPEG (no frame header, so no image size)");
}

TEST(ImageCodecTest, CorruptJpegData) {
  std::string jpeg = *EncodeJpeg(Noise(64, 64, 3), 90);
  // A stray marker (restart marker RST0, which this file has none of) in the
  // middle of the entropy-coded data.
  jpeg[jpeg.size() / 2] = '\xFF';
  jpeg[jpeg.size() / 2 + 1] = '\xD0';
  EXPECT_THAT(std::string(DecodeImage(jpeg, "bad.jpg").status().message()),
              StartsWith("bad.jpg: truncated or corrupt JPEG (libjpeg: "));
}

TEST(ImageCodecTest, TwelveBitJpegIsUnsupportedNotCorrupt) {
  std::string jpeg = *EncodeJpeg(Pattern(8, 8, 1), 90);
  const size_t sof = jpeg.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  jpeg[sof + 4] = 12;  // sample precision
  auto image = DecodeImage(jpeg, "12bit.jpg");
  EXPECT_EQ(image.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(std::string(image.status().message()),
            "12bit.jpg: unsupported kind of JPEG (libjpeg: Unsupported JPEG data precision 12)");
}

TEST(ImageCodecTest, HarmlessJpegWarningIsAccepted) {
  const Image original = Pattern(16, 16, 3);
  std::string jpeg = *EncodeJpeg(original, 95);
  // Junk before the start-of-scan marker: libjpeg warns "3 extraneous bytes
  // before marker 0xda" but every pixel is intact, and PIL accepts the file.
  const size_t sos = jpeg.find("\xFF\xDA");
  ASSERT_NE(sos, std::string::npos);
  jpeg.insert(sos, "xyz");
  auto image = DecodeImage(jpeg, "junk.jpg");
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_LT(MeanAbsDiff(*image, original), 2.0);
}

TEST(ImageCodecTest, TruncatedPng) {
  const std::string png = *EncodePng(Noise(64, 64, 3));
  EXPECT_EQ(DecodeImage(png.substr(0, png.size() / 2), "half.png").status().message(),
            "half.png: truncated or corrupt PNG (libpng: unexpected end of file)");
  std::string corrupt = png;
  corrupt[png.size() / 2] ^= 0x55;  // the IDAT CRC no longer matches
  EXPECT_THAT(std::string(DecodeImage(corrupt, "crc.png").status().message()),
              StartsWith("crc.png: truncated or corrupt PNG (libpng: "));
}

std::string PngHeader(uint32_t width, uint32_t height) {
  std::string ihdr = "IHDR";
  for (uint32_t v : {width, height}) {
    for (int shift = 24; shift >= 0; shift -= 8) ihdr.push_back(static_cast<char>(v >> shift));
  }
  ihdr += std::string("\x08\x00\x00\x00\x00", 5);  // 8-bit gray, no interlace
  const uint32_t crc = crc32(0, reinterpret_cast<const Bytef*>(ihdr.data()), ihdr.size());
  std::string bytes("\x89PNG\r\n\x1a\n\x00\x00\x00\x0d", 12);
  bytes += ihdr;
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>(crc >> shift));
  return bytes;
}

TEST(ImageCodecTest, TooLarge) {
  EXPECT_EQ(DecodeImage(PngHeader(40000, 10), "wide.png").status().message(),
            "wide.png: image too large: 40000x10 (the limit is 32768 pixels per side and "
            "268435456 pixels in all)");
  EXPECT_THAT(std::string(DecodeImage(PngHeader(20000, 20000), "big.png").status().message()),
              HasSubstr("big.png: image too large: 20000x20000"));

  // A valid JPEG whose frame header claims 30000 x 30000.
  std::string jpeg = *EncodeJpeg(Pattern(8, 8, 1), 90);
  const size_t sof = jpeg.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  for (size_t offset : {sof + 5, sof + 7}) {
    jpeg[offset] = static_cast<char>(30000 >> 8);
    jpeg[offset + 1] = static_cast<char>(30000 & 0xFF);
  }
  EXPECT_THAT(std::string(DecodeImage(jpeg, "big.jpg").status().message()),
              HasSubstr("big.jpg: image too large: 30000x30000"));

  // 60000 x 60000 (10.8 GB as RGB): refused from the header, before the
  // pixel buffer is allocated (the test would run out of memory otherwise).
  for (size_t offset : {sof + 5, sof + 7}) {
    jpeg[offset] = static_cast<char>(60000 >> 8);
    jpeg[offset + 1] = static_cast<char>(60000 & 0xFF);
  }
  EXPECT_EQ(DecodeImage(jpeg, "huge.jpg").status().message(),
            "huge.jpg: image too large: 60000x60000 (the limit is 32768 pixels per side and "
            "268435456 pixels in all)");
  EXPECT_EQ(DecodeImage(PngHeader(60000, 60000), "huge.png").status().message(),
            "huge.png: image too large: 60000x60000 (the limit is 32768 pixels per side and "
            "268435456 pixels in all)");
}

TEST(ImageCodecTest, EncoderRejectsWhatItCannotWrite) {
  Image rgba = Pattern(2, 2, 3);
  rgba.channels = 4;
  EXPECT_EQ(EncodePng(rgba).status().message(),
            "PNG encoding needs 1 (gray) or 3 (RGB) channels, not 4");
  Image floats;
  floats.height = floats.width = floats.channels = 1;
  floats.f32 = {0.5f};
  EXPECT_EQ(EncodeJpeg(floats, 90).status().message(),
            "JPEG encoding needs a uint8 image, not float");
  EXPECT_EQ(EncodeJpeg(Pattern(2, 2, 1), 0).status().message(), "JPEG quality 0 is outside 1..100");
  Image short_buffer = Pattern(2, 2, 1);
  short_buffer.u8.pop_back();
  EXPECT_EQ(EncodePng(short_buffer).status().message(),
            "PNG encoding: image 2x2x1 holds 3 values");
}

}  // namespace
}  // namespace pipeline
