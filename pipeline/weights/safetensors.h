#ifndef PIPELINE_WEIGHTS_SAFETENSORS_H_
#define PIPELINE_WEIGHTS_SAFETENSORS_H_

// Weights in Hugging Face's safetensors format, read and written:
//
//   8 bytes   N, the header's length (unsigned, little-endian)
//   N bytes   a JSON object: for every tensor
//               "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}
//             and optionally "__metadata__": {"key": "value", ...};
//             padded with spaces so the data starts 8-byte aligned
//   the rest  the tensors' bytes: row-major, little-endian, back to back;
//             offsets count from the start of this buffer
//
// The reader checks what the reference reader (the safetensors library)
// checks, and a few things more: the header's length (at most 100 MB) and
// that it is in the file; strict JSON, at most 4 million values (far more
// than any model's header; bounds the memory a hostile header can take);
// every entry's fields and types; no name twice; tensors that, ordered by
// offset, cover the buffer exactly, without gaps or overlaps; each tensor's
// span = its elements x its dtype's size, with no overflow; BOOL bytes 0 or
// 1. Anything else is an error naming the file, the tensor where there is
// one, and what is wrong. Nothing in the file is executed, and no tensor is
// allocated before the header has been checked against the file's size.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pipeline/weights/state_dict_reader.h"
#include "torch/types.h"

namespace pipeline {

// The header's free-form strings ("__metadata__"), in the file's order.
using SafetensorsMetadata = std::vector<std::pair<std::string, std::string>>;

// One tensor of a header: where its bytes are and what they are.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // as the file names it: "F32", "BF16", "I64", ...
  torch::ScalarType scalar_type = torch::kFloat;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // data_offsets, relative to the data buffer
  uint64_t end = 0;
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // ordered by offset
  SafetensorsMetadata metadata;
};

// The reference reader's limit on N.
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// The header `json` of a file whose data buffer (after the header) has
// `buffer_bytes` bytes, checked as above. Errors name the tensor, not the
// file.
absl::StatusOr<SafetensorsHeader> ParseSafetensorsHeader(absl::string_view json,
                                                         uint64_t buffer_bytes);

struct SafetensorsContents {
  NamedTensors tensors;  // in offset order, each in the file's dtype
  SafetensorsMetadata metadata;
};

// The tensors of the safetensors file `path`, or an error naming `path`:
// not found, truncated, a header that does not describe the file, a dtype
// LibTorch 1.13 lacks (U16, U32, U64, F8_*), no tensors at all.
absl::StatusOr<SafetensorsContents> ReadSafetensors(const std::string& path);

// Whether ReadStateDict should read `path` as safetensors. By content: a file
// whose ninth byte (the header's first, after the 8-byte length) is '{',
// which in torch.save's zip archive is a compression method's low byte (0
// or 8). A file without it is taken as safetensors only when it does not
// start "PK" (a zip) and its name ends ".safetensors", so that a file too
// short or damaged gets the error of the format meant.
bool IsSafetensorsFile(const std::string& path);

// The file the reference writer (safetensors.torch.save_file) makes of
// `tensors` with `metadata`: tensors ordered by dtype, widest first, then
// by name; the header compact JSON, "__metadata__" first (left out when
// empty), padded with spaces to a multiple of 8 bytes. Every tensor's dtype
// must have a safetensors name, and no name may come twice.
absl::StatusOr<std::string> SafetensorsBytes(const NamedTensors& tensors,
                                             const SafetensorsMetadata& metadata);

// SafetensorsBytes written to `path` all or nothing. {"format": "pt"} is
// what Hugging Face's tools write for PyTorch weights and look for.
absl::Status WriteSafetensors(const std::string& path, const NamedTensors& tensors,
                              const SafetensorsMetadata& metadata = {{"format", "pt"}});

}  // namespace pipeline

#endif  // PIPELINE_WEIGHTS_SAFETENSORS_H_
