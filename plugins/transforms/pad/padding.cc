#include "plugins/transforms/pad/padding.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/image/image_ops.h"

namespace pipeline {
namespace padding {
namespace {

constexpr int kFill = -1;

const char* ModeName(PaddingMode mode) {
  switch (mode) {
    case PaddingMode::kConstant:
      return "CONSTANT";
    case PaddingMode::kEdge:
      return "EDGE";
    case PaddingMode::kReflect:
      return "REFLECT";
    case PaddingMode::kSymmetric:
      return "SYMMETRIC";
  }
  return "?";
}

// For each output index along one axis of length `size` padded by `before`
// and `after`: the source index, or kFill. The modes' limits were checked.
std::vector<int> SourceIndices(int size, int before, int after, PaddingMode mode) {
  std::vector<int> indices(static_cast<size_t>(before) + size + after);
  for (int o = 0; o < static_cast<int>(indices.size()); ++o) {
    const int i = o - before;
    int source = i;
    if (i < 0 || i >= size) {
      switch (mode) {
        case PaddingMode::kConstant:
          source = kFill;
          break;
        case PaddingMode::kEdge:
          source = i < 0 ? 0 : size - 1;
          break;
        case PaddingMode::kReflect:
          source = i < 0 ? -i : 2 * (size - 1) - i;
          break;
        case PaddingMode::kSymmetric:
          source = i < 0 ? -i - 1 : 2 * size - 1 - i;
          break;
      }
    }
    indices[o] = source;
  }
  return indices;
}

// A run of output columns that read consecutive source columns from
// `source` on (or the fill, source kFill).
struct Segment {
  int source;
  int length;
};

std::vector<Segment> ColumnSegments(const std::vector<int>& cols) {
  std::vector<Segment> segments;
  for (int source : cols) {
    if (!segments.empty()) {
      Segment& last = segments.back();
      const bool extends = source == kFill
                               ? last.source == kFill
                               : last.source != kFill && source == last.source + last.length;
      if (extends) {
        ++last.length;
        continue;
      }
    }
    segments.push_back({source, 1});
  }
  return segments;
}

// Each output row copies its source row's segments whole (the interior is
// one copy; reflected borders are one pixel each).
template <typename T>
void PadT(const Image& in, const std::vector<int>& rows, const std::vector<int>& cols, T fill,
          Image& out) {
  const std::vector<T>& src = image_ops::Pixels<T>(const_cast<Image&>(in));
  std::vector<T>& dst = image_ops::Pixels<T>(out);
  const size_t c = in.channels;
  dst.resize(static_cast<size_t>(out.height) * out.width * c);
  const std::vector<Segment> segments = ColumnSegments(cols);
  T* to = dst.data();
  for (int y = 0; y < out.height; ++y) {
    const int sy = rows[y];
    for (const Segment& segment : segments) {
      const size_t count = segment.length * c;
      if (sy == kFill || segment.source == kFill) {
        std::fill_n(to, count, fill);
      } else {
        std::copy_n(&src[(static_cast<size_t>(sy) * in.width + segment.source) * c], count, to);
      }
      to += count;
    }
  }
}

}  // namespace

absl::StatusOr<Padding> PaddingFromValues(const std::vector<int>& values,
                                          absl::string_view transform) {
  for (int v : values) {
    if (v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(transform, ": padding must be >= 0 pixels, got ", v));
    }
  }
  switch (values.size()) {
    case 1:
      return Padding{values[0], values[0], values[0], values[0]};
    case 2:
      return Padding{values[0], values[1], values[0], values[1]};
    case 4:
      return Padding{values[0], values[1], values[2], values[3]};
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          transform, ": padding takes 1 value (all sides), 2 (left/right, top/bottom) or 4 "
          "(left, top, right, bottom), got ", values.size()));
  }
}

absl::StatusOr<Image> Pad(const Image& image, const Padding& padding, float fill,
                          PaddingMode mode, absl::string_view transform) {
  if (padding.left < 0 || padding.top < 0 || padding.right < 0 || padding.bottom < 0) {
    return absl::InvalidArgumentError(absl::StrCat(transform, ": padding must be >= 0 pixels"));
  }
  if (mode == PaddingMode::kReflect || mode == PaddingMode::kSymmetric) {
    // torch.nn.functional.pad(mode="reflect") needs padding < side;
    // torchvision's symmetric indexing reaches one pixel further.
    const bool reflect = mode == PaddingMode::kReflect;
    struct Side {
      const char* name;
      int pad;
      int size;
      const char* dimension;
    };
    for (const Side& side : {Side{"left", padding.left, image.width, "width"},
                             Side{"right", padding.right, image.width, "width"},
                             Side{"top", padding.top, image.height, "height"},
                             Side{"bottom", padding.bottom, image.height, "height"}}) {
      if (reflect ? side.pad >= side.size : side.pad > side.size) {
        return absl::InvalidArgumentError(absl::StrCat(
            transform, ": padding_mode ", ModeName(mode), " needs each padding ",
            reflect ? "smaller than" : "at most", " the side it mirrors, but the ", side.name,
            " padding is ", side.pad, " and the ", image.ShapeString(), " image's ",
            side.dimension, " is ", side.size));
      }
    }
  }
  if (mode == PaddingMode::kConstant && !image.is_float() &&
      !(fill >= 0 && fill <= 255 && std::floor(fill) == fill)) {
    return absl::InvalidArgumentError(absl::StrCat(
        transform, ": fill ", fill, " is not a uint8 value (an integer in [0, 255]) and the ",
        image.ShapeString(), " image is u8; fill a float image (after to_float) with fractions"));
  }
  Image out;
  out.height = image.height + padding.top + padding.bottom;
  out.width = image.width + padding.left + padding.right;
  out.channels = image.channels;
  const std::vector<int> rows = SourceIndices(image.height, padding.top, padding.bottom, mode);
  const std::vector<int> cols = SourceIndices(image.width, padding.left, padding.right, mode);
  if (image.is_float()) {
    PadT<float>(image, rows, cols, fill, out);
  } else {
    const float u8_fill = mode == PaddingMode::kConstant ? fill : 0;
    PadT<uint8_t>(image, rows, cols, static_cast<uint8_t>(u8_fill), out);
  }
  return out;
}

}  // namespace padding
}  // namespace pipeline
