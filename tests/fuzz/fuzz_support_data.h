#pragma once
// Shared by the data fuzzers: the first bytes of a fuzz input choose reader options, so that
// one corpus explores chunk boundaries and the row size limit.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
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

// Everything a row reader reports for `body`, as text lines, so that two reads can be compared.
inline std::vector<std::string> read_input_rows(std::string_view body, data::LineFormat format,
                                                const data::ReaderOptions& options,
                                                const data::ColumnSpec& columns) {
  using data::RowReader;
  std::vector<std::string> events;
  try {
    auto reader = RowReader::open_bytes(body, "fuzz.input", format, columns, options);
    data::Row row;
    data::BadRow bad;
    for (;;) {
      auto r = reader->next(row, bad);
      if (r == RowReader::Result::kEnd) break;
      if (r == RowReader::Result::kBadRow) {
        events.push_back("bad " + std::to_string(bad.index) + ":" + std::to_string(bad.line) + " " +
                         bad.reason);
      } else {
        events.push_back("row " + std::to_string(row.index) + ":" + std::to_string(row.line) + " " +
                         row.id.text + (row.id.is_string ? "s|" : "n|") + row.text + "|" +
                         row.text_pair.value_or("-") + "|" + std::to_string(row.input_ids.size()) +
                         "," + std::to_string(row.attention_mask.size()) + "," +
                         std::to_string(row.token_type_ids.size()));
      }
    }
    if (reader->bytes_read() != body.size()) events.push_back("short read");
  } catch (const Error& e) {
    events.push_back(std::string("error ") + e.what());
  }
  return events;
}

// The input-row fuzzers' whole body: never a crash, and the same rows whatever the read size.
// Flag bits of the first byte: 0x40 reads a pair column, 0x20 reads pre-tokenised ids only.
inline int fuzz_input_rows(const std::uint8_t* data, std::size_t size, data::LineFormat format) {
  Split split = split_options(data, size);
  data::ColumnSpec columns;
  if (size > 0 && (data[0] & 0x40)) columns.text_pair_col = "pair";
  if (size > 0 && (data[0] & 0x20)) columns.read_text = false;
  auto a = read_input_rows(split.body, format, split.small, columns);
  auto b = read_input_rows(split.body, format, split.large, columns);
  if (a != b) __builtin_trap();  // the read size changed what was read
  return 0;
}

}  // namespace mcinfer::fuzz
