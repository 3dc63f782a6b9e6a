#ifndef PIPELINE_UTIL_CRC32C_H_
#define PIPELINE_UTIL_CRC32C_H_

// CRC-32C (Castagnoli), the checksum of TFRecord framing.

#include <cstdint>
#include <string_view>

namespace pipeline {

uint32_t Crc32c(std::string_view data);

// TFRecord stores CRCs masked, so that a CRC of data that itself holds CRCs
// does not degrade: rotate right by 15 bits and add a constant.
uint32_t MaskCrc32c(uint32_t crc);

}  // namespace pipeline

#endif  // PIPELINE_UTIL_CRC32C_H_
