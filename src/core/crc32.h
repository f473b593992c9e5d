#pragma once
// CRC-32 (IEEE 802.3, as zlib computes it), for detecting torn or corrupted shard records.

#include <cstdint>
#include <string_view>

namespace mcinfer {

std::uint32_t crc32(std::string_view bytes, std::uint32_t crc = 0);

}  // namespace mcinfer
