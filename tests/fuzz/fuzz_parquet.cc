// Parquet files (builds with Arrow only): arbitrary bytes as an input file and as a merge input
// are read to the end or refused with an Error; never a crash, a hang or an exception of another
// kind. Arrow's own Parquet decoder is fuzzed upstream; this covers what mcinfer does with what
// it returns (column lookup by name, text/dictionary/integer columns, nulls, progress, the
// prediction table's schema). The first byte's flag bits choose the columns read: 0x40 a pair
// column, 0x20 ids only.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "data/prediction_reader.h"
#include "data/rows.h"

namespace {

namespace fs = std::filesystem;
using mcinfer::data::RowReader;

// Rows read per input, at most. A few bytes of Parquet can truthfully hold billions of rows (a
// run-length-encoded page of nulls; a footer-only count when no column is read), and reading
// them is work in proportion to the file's claim, not a hang; the cap keeps each input within
// the fuzzer's 10 s timeout. The first 2^16 rows exercise every path a row can take.
constexpr std::uint64_t kMaxRows = std::uint64_t{1} << 16;

void read_rows(const fs::path& path, std::uint8_t flags) {
  mcinfer::data::ColumnSpec columns;
  if (flags & 0x40) columns.text_pair_col = "pair";
  if (flags & 0x20) columns.read_text = false;
  try {
    auto reader = RowReader::open(path, mcinfer::data::InputFormat::kParquet, columns);
    mcinfer::data::Row row;
    mcinfer::data::BadRow bad;
    std::uint64_t last = 0;
    for (std::uint64_t n = 0; n < kMaxRows && reader->next(row, bad) != RowReader::Result::kEnd;
         ++n) {
      const std::uint64_t now = reader->bytes_read();
      if (now < last || now > reader->file_size()) __builtin_trap();  // progress goes one way
      last = now;
    }
  } catch (const mcinfer::Error&) {
  }
}

void read_predictions(const fs::path& path) {
  try {
    auto reader =
        mcinfer::data::PredictionReader::open(path, mcinfer::data::OutputFormat::kParquet);
    mcinfer::data::PredictionRow row;
    for (std::uint64_t n = 0; n < kMaxRows && reader->next(row); ++n) {
      const std::size_t width =
          reader->schema().sparse ? row.indices.size() : reader->schema().columns.size();
      if (row.values.size() != width) __builtin_trap();
    }
  } catch (const mcinfer::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fs::path path =
      fs::temp_directory_path() / ("mcinfer_fuzz_" + std::to_string(::getpid()) + ".parquet");
  const std::uint8_t flags = size > 0 ? data[0] : 0;
  const std::size_t skip = size > 0 ? 1 : 0;
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data) + skip,
              static_cast<std::streamsize>(size - skip));
  }
  read_rows(path, flags);
  read_predictions(path);
  return 0;
}
