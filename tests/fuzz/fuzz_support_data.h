#pragma once
// Shared by the data fuzzers: the first bytes of a fuzz input choose reader options, so that
// one corpus explores chunk boundaries and the row size limit.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "data/rows.h"

namespace mcinfer::fuzz {

struct Split {
  data::ReaderOptions small;  // tiny chunks: every refill and rescan path
  data::ReaderOptions large;  // one chunk holds everything
  std::string_view body;
};

inline Split split_options(const std::uint8_t* data, std::size_t size) {
  Split s;
  std::uint8_t a = size > 0 ? data[0] : 0;
  std::uint8_t b = size > 1 ? data[1] : 0;
  std::size_t skip = size < 2 ? size : 2;
  s.body = std::string_view(reinterpret_cast<const char*>(data) + skip, size - skip);
  std::size_t max_row = (b & 0x80) ? (std::size_t{64} << 20) : 8 + (b & 0x7F) * 4;
  s.small.chunk_bytes = 1 + (a % 17);
  s.small.max_row_bytes = max_row;
  s.large.chunk_bytes = std::size_t{1} << 20;
  s.large.max_row_bytes = max_row;
  return s;
}

}  // namespace mcinfer::fuzz
