#include "pipeline/weights/safetensors.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/util/durable_file.h"
#include "pipeline/util/json_parser.h"
#include "pipeline/util/status_macros.h"
#include "pipeline/util/torch_status.h"

// The format stores little-endian bytes, which this copies as they are.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors.cc copies bytes as they are: a little-endian host only");

namespace pipeline {
namespace {

struct DtypeInfo {
  const char* name;
  int size;  // bytes per element
  // LibTorch 1.13 has no unsigned types but uint8 and no float8: those files
  // are refused by name rather than misread.
  bool supported;
  torch::ScalarType scalar_type;
};

// In the reference library's order, narrowest first, which its writer sorts
// by (widest first) so every tensor starts aligned to its element size.
constexpr DtypeInfo kDtypes[] = {
    {"BOOL", 1, true, torch::kBool},     {"U8", 1, true, torch::kByte},
    {"I8", 1, true, torch::kChar},       {"F8_E5M2", 1, false, torch::kByte},
    {"F8_E4M3", 1, false, torch::kByte}, {"I16", 2, true, torch::kShort},
    {"U16", 2, false, torch::kShort},    {"F16", 2, true, torch::kHalf},
    {"BF16", 2, true, torch::kBFloat16}, {"I32", 4, true, torch::kInt},
    {"U32", 4, false, torch::kInt},      {"F32", 4, true, torch::kFloat},
    {"F64", 8, true, torch::kDouble},    {"I64", 8, true, torch::kLong},
    {"U64", 8, false, torch::kLong},
};

const DtypeInfo* DtypeNamed(const std::string& name) {
  for (const DtypeInfo& dtype : kDtypes) {
    if (name == dtype.name) return &dtype;
  }
  return nullptr;
}

// The dtype's position in kDtypes, or -1 for one safetensors cannot store.
int DtypeRank(torch::ScalarType scalar_type) {
  for (int i = 0; i < static_cast<int>(std::size(kDtypes)); ++i) {
    if (kDtypes[i].supported && kDtypes[i].scalar_type == scalar_type) return i;
  }
  return -1;
}

absl::Status InFile(const std::string& path, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", message));
}

absl::Status TensorError(const std::string& name, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("tensor \"", name, "\": ", message));
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// A list of non-negative integers, each at most `limit`.
absl::StatusOr<std::vector<uint64_t>> Integers(const JsonValue& value, uint64_t limit) {
  if (value.kind != JsonValue::Kind::kArray) {
    return absl::InvalidArgumentError(
        absl::StrCat("is ", JsonKindName(value.kind), ", not an array of integers"));
  }
  std::vector<uint64_t> numbers;
  for (const JsonValue& item : value.items) {
    const std::optional<uint64_t> number = JsonUint64(item);
    if (!number || *number > limit) {
      return absl::InvalidArgumentError(absl::StrCat(
          "holds ", item.kind == JsonValue::Kind::kNumber ? item.text : JsonKindName(item.kind),
          ", not an integer from 0 to ", limit));
    }
    numbers.push_back(*number);
  }
  return numbers;
}

absl::Status EntryField(const std::string& field, const JsonValue& value, SafetensorsEntry* entry) {
  if (field == "dtype") {
    if (value.kind != JsonValue::Kind::kString) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"dtype\" is ", JsonKindName(value.kind), ", not a string"));
    }
    const DtypeInfo* dtype = DtypeNamed(value.text);
    if (dtype == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown dtype ", JsonQuote(value.text)));
    }
    if (!dtype->supported) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dtype ", dtype->name,
          " has no LibTorch counterpart here (unsigned types but U8, and float8, are not "
          "supported); convert the file in Python"));
    }
    entry->dtype = dtype->name;
    entry->scalar_type = dtype->scalar_type;
  } else if (field == "shape") {
    auto dims = Integers(value, std::numeric_limits<int64_t>::max());
    if (!dims.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("\"shape\" ", dims.status().message()));
    }
    entry->shape.assign(dims->begin(), dims->end());
  } else if (field == "data_offsets") {
    auto offsets = Integers(value, std::numeric_limits<uint64_t>::max());
    if (!offsets.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"data_offsets\" ", offsets.status().message()));
    }
    if (offsets->size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat("\"data_offsets\" holds ", offsets->size(),
                                                     " numbers, not 2 (begin and end)"));
    }
    entry->begin = (*offsets)[0];
    entry->end = (*offsets)[1];
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown field ", JsonQuote(field),
                                                   " (a tensor has \"dtype\", \"shape\" and "
                                                   "\"data_offsets\")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<SafetensorsEntry> Entry(const std::string& name, const JsonValue& value) {
  if (value.kind != JsonValue::Kind::kObject) {
    return TensorError(name, absl::StrCat("is ", JsonKindName(value.kind),
                                          ", not an object with dtype, shape and data_offsets"));
  }
  SafetensorsEntry entry;
  entry.name = name;
  std::set<std::string> fields;
  for (const auto& [field, field_value] : value.members) {
    if (!fields.insert(field).second) {
      return TensorError(name, absl::StrCat("field ", JsonQuote(field), " appears twice"));
    }
    if (absl::Status status = EntryField(field, field_value, &entry); !status.ok()) {
      return TensorError(name, status.message());
    }
  }
  for (const char* required : {"dtype", "shape", "data_offsets"}) {
    if (!fields.count(required)) {
      return TensorError(name, absl::StrCat("has no \"", required, "\""));
    }
  }
  return entry;
}

absl::Status ParseMetadata(const JsonValue& value, SafetensorsMetadata* metadata) {
  // The reference reader takes null as "no metadata".
  if (value.kind == JsonValue::Kind::kNull) return absl::OkStatus();
  if (value.kind != JsonValue::Kind::kObject) {
    return absl::InvalidArgumentError(absl::StrCat("\"__metadata__\" is ", JsonKindName(value.kind),
                                                   ", not an object of strings"));
  }
  std::set<std::string> keys;
  for (const auto& [key, text] : value.members) {
    if (!keys.insert(key).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"__metadata__\" names ", JsonQuote(key), " twice"));
    }
    if (text.kind != JsonValue::Kind::kString) {
      return absl::InvalidArgumentError(absl::StrCat("\"__metadata__\" ", JsonQuote(key), " is ",
                                                     JsonKindName(text.kind), ", not a string"));
    }
    metadata->emplace_back(key, text.text);
  }
  return absl::OkStatus();
}

// The entry's bytes: its elements (multiplied in order, as the reference
// does, so an overflow is found the same way) times its element size.
absl::StatusOr<uint64_t> ByteSize(const SafetensorsEntry& entry) {
  uint64_t bytes = 1;
  for (const int64_t dim : entry.shape) {
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes)) {
      return TensorError(entry.name, absl::StrCat("shape ", ShapeText(entry.shape),
                                                  " has more elements than 64 bits count"));
    }
  }
  if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(DtypeNamed(entry.dtype)->size), &bytes)) {
    return TensorError(entry.name,
                       absl::StrCat("shape ", ShapeText(entry.shape), " of ", entry.dtype,
                                    " needs more bytes than 64 bits count"));
  }
  return bytes;
}

// Ordered by offset, the tensors must tile [0, buffer_bytes) exactly.
absl::Status CheckLayout(const std::vector<SafetensorsEntry>& entries, uint64_t buffer_bytes) {
  uint64_t expected = 0;
  const SafetensorsEntry* previous = nullptr;
  for (const SafetensorsEntry& entry : entries) {
    const std::string offsets = absl::StrCat("data_offsets [", entry.begin, ", ", entry.end, "]");
    if (entry.end < entry.begin) return TensorError(entry.name, offsets + " end before they begin");
    if (entry.end > buffer_bytes) {
      return TensorError(entry.name,
                         absl::StrCat(offsets, " run past the end of the data, which has ",
                                      buffer_bytes, " bytes (a truncated file?)"));
    }
    if (entry.begin != expected) {
      return TensorError(
          entry.name,
          absl::StrCat(offsets, entry.begin < expected ? " overlap" : " leave a gap after",
                       previous == nullptr ? std::string(" the start of the data")
                                           : absl::StrCat(" tensor \"", previous->name,
                                                          "\", which ends at ", expected),
                       "; tensors must fill the data back to back"));
    }
    ASSIGN_OR_RETURN(const uint64_t bytes, ByteSize(entry));
    if (entry.end - entry.begin != bytes) {
      return TensorError(
          entry.name, absl::StrCat(offsets, " span ", entry.end - entry.begin, " bytes, but shape ",
                                   ShapeText(entry.shape), " of ", entry.dtype, " needs ", bytes));
    }
    expected = entry.end;
    previous = &entry;
  }
  if (expected != buffer_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the tensors fill ", expected, " bytes of data, but ", buffer_bytes,
                     " follow the header; the rest belongs to no tensor"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SafetensorsHeader> ParseSafetensorsHeader(absl::string_view json,
                                                         uint64_t buffer_bytes) {
  auto root = ParseJson(json);
  if (!root.ok()) return root.status();
  if (root->kind != JsonValue::Kind::kObject) {
    return absl::InvalidArgumentError(
        absl::StrCat("is ", JsonKindName(root->kind), ", not a JSON object"));
  }
  SafetensorsHeader header;
  std::set<std::string> names;
  for (const auto& [name, value] : root->members) {
    if (!names.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat(JsonQuote(name), " appears twice"));
    }
    if (name == "__metadata__") {
      RETURN_IF_ERROR(ParseMetadata(value, &header.metadata));
      continue;
    }
    ASSIGN_OR_RETURN(SafetensorsEntry entry, Entry(name, value));
    header.entries.push_back(std::move(entry));
  }
  std::stable_sort(header.entries.begin(), header.entries.end(),
                   [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
                     return std::make_pair(a.begin, a.end) < std::make_pair(b.begin, b.end);
                   });
  RETURN_IF_ERROR(CheckLayout(header.entries, buffer_bytes));
  return header;
}

absl::StatusOr<SafetensorsContents> ReadSafetensors(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot open the file"));
  file.seekg(0, std::ios::end);
  const std::streamoff size = file.tellg();
  file.seekg(0);
  if (size < 0 || !file) return InFile(path, "cannot read the file");
  const uint64_t file_bytes = static_cast<uint64_t>(size);
  if (file_bytes < 8) {
    return InFile(path, absl::StrCat("is ", file_bytes,
                                     " bytes, too short for a safetensors file (8 bytes of "
                                     "header length come first; a truncated file?)"));
  }
  unsigned char length_bytes[8];
  file.read(reinterpret_cast<char*>(length_bytes), 8);
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | length_bytes[i];
  if (header_bytes > kSafetensorsMaxHeaderBytes) {
    return InFile(path,
                  absl::StrCat("the header length (the first 8 bytes) says ", header_bytes,
                               " bytes, more than safetensors allows (", kSafetensorsMaxHeaderBytes,
                               "): a damaged file, or not safetensors"));
  }
  if (header_bytes > file_bytes - 8) {
    return InFile(path,
                  absl::StrCat("the header length (the first 8 bytes) says ", header_bytes,
                               " bytes, but only ", file_bytes - 8, " follow (a truncated file?)"));
  }
  std::string json(header_bytes, '\0');
  if (!file.read(json.data(), static_cast<std::streamsize>(header_bytes))) {
    return InFile(path, "cannot read the header");
  }
  auto header = ParseSafetensorsHeader(json, file_bytes - 8 - header_bytes);
  if (!header.ok()) return InFile(path, absl::StrCat("header: ", header.status().message()));
  if (header->entries.empty()) return InFile(path, "holds no tensors");

  SafetensorsContents contents;
  contents.metadata = std::move(header->metadata);
  for (const SafetensorsEntry& entry : header->entries) {
    // The span was checked against the file's size, so this allocates no
    // more than the file holds.
    ASSIGN_OR_RETURN(torch::Tensor tensor,
                     CallTorch(absl::StrCat(path, ": tensor \"", entry.name, "\""), [&] {
                       return torch::empty(entry.shape, torch::dtype(entry.scalar_type));
                     }));
    const uint64_t bytes = entry.end - entry.begin;
    if (bytes > 0) {
      file.seekg(static_cast<std::streamoff>(8 + header_bytes + entry.begin));
      if (!file.read(static_cast<char*>(tensor.data_ptr()), static_cast<std::streamsize>(bytes))) {
        return InFile(path, absl::StrCat("tensor \"", entry.name,
                                         "\": cannot read its data (did the file shrink?)"));
      }
    }
    if (entry.scalar_type == torch::kBool) {
      const auto* values = static_cast<const unsigned char*>(tensor.data_ptr());
      for (uint64_t i = 0; i < bytes; ++i) {
        if (values[i] > 1) {
          return InFile(path, absl::StrCat("tensor \"", entry.name, "\": BOOL element ", i, " is ",
                                           static_cast<int>(values[i]), ", neither 0 nor 1"));
        }
      }
    }
    contents.tensors.emplace_back(entry.name, std::move(tensor));
  }
  return contents;
}

bool IsSafetensorsFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  char head[9] = {};
  file.read(head, sizeof(head));
  const std::streamsize read = file.gcount();
  // Not the first bytes: a header of 19280 bytes makes a length that starts
  // "PK" too. A zip's ninth byte is the low byte of its first entry's
  // compression method (0 or 8, never '{').
  if (read == 9 && head[8] == '{') return true;
  if (read >= 2 && head[0] == 'P' && head[1] == 'K') return false;
  constexpr absl::string_view kExtension = ".safetensors";
  return path.size() >= kExtension.size() &&
         path.compare(path.size() - kExtension.size(), kExtension.size(), kExtension.data()) == 0;
}

absl::StatusOr<std::string> SafetensorsBytes(const NamedTensors& tensors,
                                             const SafetensorsMetadata& metadata) {
  struct Item {
    const std::string* name;
    int rank;
    torch::Tensor tensor;
  };
  std::vector<Item> items;
  std::set<std::string> names;
  for (const auto& [name, tensor] : tensors) {
    if (!names.insert(name).second) {
      return TensorError(name, "appears twice; safetensors names each tensor once");
    }
    if (!tensor.defined()) return TensorError(name, "is undefined");
    const int rank = DtypeRank(tensor.scalar_type());
    if (rank < 0) {
      return TensorError(name, absl::StrCat("dtype ", c10::toString(tensor.scalar_type()),
                                            " has no safetensors counterpart"));
    }
    // A lambda may not capture a structured binding before C++20 (clang refuses).
    const torch::Tensor& source = tensor;
    ASSIGN_OR_RETURN(torch::Tensor dense, CallTorch(absl::StrCat("tensor \"", name, "\""), [&] {
                       return source.detach().to(torch::kCPU).contiguous();
                     }));
    items.push_back({&name, rank, std::move(dense)});
  }
  // As the reference writer: the widest dtypes first, then by name
  // (std::string compares bytes as unsigned, as Rust's String does).
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    if (a.rank != b.rank) return a.rank > b.rank;
    return *a.name < *b.name;
  });

  std::vector<std::string> members;
  if (!metadata.empty()) {
    std::vector<std::string> pairs;
    for (const auto& [key, value] : metadata) {
      pairs.push_back(absl::StrCat(JsonQuote(key), ":", JsonQuote(value)));
    }
    members.push_back(absl::StrCat("\"__metadata__\":{", absl::StrJoin(pairs, ","), "}"));
  }
  uint64_t offset = 0;
  for (const Item& item : items) {
    const uint64_t bytes = static_cast<uint64_t>(item.tensor.nbytes());
    members.push_back(absl::StrCat(JsonQuote(*item.name), ":{\"dtype\":\"", kDtypes[item.rank].name,
                                   "\",\"shape\":[", absl::StrJoin(item.tensor.sizes(), ","),
                                   "],\"data_offsets\":[", offset, ",", offset + bytes, "]}"));
    offset += bytes;
  }
  std::string header = absl::StrCat("{", absl::StrJoin(members, ","), "}");
  // Spaces up to a multiple of 8, so the data (and every tensor, widest
  // first) starts aligned.
  header.append((8 - header.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + header.size() + offset);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(header.size() >> (8 * i)));
  out += header;
  for (const Item& item : items) {
    if (item.tensor.nbytes() == 0) continue;  // no storage to point at
    out.append(static_cast<const char*>(item.tensor.data_ptr()), item.tensor.nbytes());
  }
  return out;
}

absl::Status WriteSafetensors(const std::string& path, const NamedTensors& tensors,
                              const SafetensorsMetadata& metadata) {
  auto bytes = SafetensorsBytes(tensors, metadata);
  if (!bytes.ok()) return InFile(path, bytes.status().message());
  return WriteFileAtomically(path, *bytes);
}

}  // namespace pipeline
