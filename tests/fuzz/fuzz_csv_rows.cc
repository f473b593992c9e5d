// CSV input rows: never a crash, and the same rows whatever the read size.
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/rows.h"
#include "fuzz_support_data.h"

namespace {

std::vector<std::string> read_all(std::string_view body, const mcinfer::data::ReaderOptions& o,
                                  const mcinfer::data::ColumnSpec& columns) {
  using mcinfer::data::RowReader;
  std::vector<std::string> events;
  try {
    auto reader = RowReader::open_bytes(body, "fuzz.csv", mcinfer::data::Format::kCsv, columns, o);
    mcinfer::data::Row row;
    mcinfer::data::BadRow bad;
    for (;;) {
      auto r = reader->next(row, bad);
      if (r == RowReader::Result::kEnd) break;
      if (r == RowReader::Result::kBadRow) {
        events.push_back("bad " + std::to_string(bad.index) + ":" + std::to_string(bad.line) + " " +
                         bad.reason);
      } else {
        events.push_back("row " + std::to_string(row.index) + ":" + std::to_string(row.line) + " " +
                         row.id.text + "|" + row.text + "|" + row.text_pair.value_or("-"));
      }
    }
    if (reader->bytes_read() != body.size()) events.push_back("short read");
  } catch (const mcinfer::Error& e) {
    events.push_back(std::string("error ") + e.what());
  }
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto split = mcinfer::fuzz::split_options(data, size);
  mcinfer::data::ColumnSpec columns;
  if (size > 0 && (data[0] & 0x40)) columns.text_pair_col = "pair";
  if (size > 0 && (data[0] & 0x20)) columns.read_text = false;
  auto a = read_all(split.body, split.small, columns);
  auto b = read_all(split.body, split.large, columns);
  if (a != b) __builtin_trap();  // the read size changed what was read
  return 0;
}
