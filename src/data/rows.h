#pragma once
// Streaming readers for the input rows of a run: CSV (RFC 4180), JSONL and Parquet (one record
// batch at a time; only in builds with Arrow). Memory use is bounded by the largest row (Parquet:
// by a record batch), never by the file.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/formats.h"

namespace mcinfer::data {

struct ColumnSpec {
  std::string id_col = "id";
  std::string text_col = "text";
  std::optional<std::string> text_pair_col;
  // false: only ids are wanted (merge --expect); text columns are neither required nor read.
  bool read_text = true;
};

struct ReaderOptions {
  // A row longer than this is a bad row ("row larger than 64 MiB"); the reader never buffers
  // much more than one such row.
  std::size_t max_row_bytes = std::size_t{64} << 20;
  std::size_t chunk_bytes = std::size_t{1} << 20;  // read(2) size
};

// An id exactly as read: CSV fields are strings; JSON ids keep their kind and, for numbers,
// their original spelling. Ids compare as exact text.
struct RowId {
  std::string text;       // the string's content, or the number's text as written
  bool is_string = true;  // false for JSON numbers and for row-number ids
};

struct Row {
  std::uint64_t index = 0;  // 0-based data row number in the file (bad rows counted too)
  std::uint64_t line = 0;   // 1-based line on which the row starts
  RowId id;                 // the id column, or the row number when the file has none
  std::string text;         // raw bytes of the text column (may be invalid UTF-8)
  std::optional<std::string> text_pair;
  // Pre-tokenised JSONL rows carry ids instead of text (then text is empty).
  bool pretokenized = false;
  std::vector<std::int32_t> input_ids;
  std::vector<std::int32_t> attention_mask;  // empty when absent
  std::vector<std::int32_t> token_type_ids;  // empty when absent
};

// A row that cannot be read. The reader has already moved past it, so the caller may skip it
// and call next() again.
struct BadRow {
  std::uint64_t index = 0;
  std::uint64_t line = 0;
  std::string reason;  // e.g. "expected 3 fields, got 2"
};

class RowReader {
 public:
  virtual ~RowReader() = default;
  // Opens the file and reads the header (CSV). A missing column is reported here as an Error
  // naming the file and the column. Rows without an id column get their row number as id.
  static std::unique_ptr<RowReader> open(const std::filesystem::path& path, InputFormat format,
                                         const ColumnSpec& columns);
  static std::unique_ptr<RowReader> open(const std::filesystem::path& path, InputFormat format,
                                         const ColumnSpec& columns, const ReaderOptions& options);
  // Reads `bytes` (which must outlive the reader) as if it were the file `name`: for tests
  // and fuzzing.
  static std::unique_ptr<RowReader> open_bytes(std::string_view bytes,
                                               const std::filesystem::path& name, LineFormat format,
                                               const ColumnSpec& columns,
                                               const ReaderOptions& options);

  enum class Result { kRow, kBadRow, kEnd };
  // Reads the next row into `row` (kRow), or describes a malformed one in `bad` (kBadRow; the
  // caller decides whether to stop, --on-bad-row error, or go on, skip), or kEnd.
  // I/O failures throw Error. Blank lines are not rows.
  //
  // CSV: the first non-blank record is the header (a UTF-8 BOM is skipped); an empty file is
  // an Error ("no header"), a header-only file has zero rows. A quote inside an unquoted
  // field is kept as an ordinary byte (as pandas and Python's csv do).
  // JSONL: one object per non-blank line; an empty file has zero rows. Whether rows carry
  // ids is decided by the first well-formed row: after it, a row without (or with) the id
  // field, where the first had it (or not), is a bad row. A row with `input_ids` (an array
  // of int32) is pre-tokenised; `attention_mask` and `token_type_ids` must then match its
  // length. Duplicate keys among the fields read are a bad row.
  // Parquet: the columns are found by name (string, large_string or dictionary of them; an
  // integer id column gives its decimal text, as a JSON number would); a null text is a bad
  // row; Row::line is the 1-based row number. Progress counts the uncompressed bytes of the
  // columns read.
  virtual Result next(Row& row, BadRow& bad) = 0;

  virtual const std::filesystem::path& path() const = 0;
  // Bytes consumed so far, for progress (Parquet: uncompressed bytes of the columns read, and
  // file_size() their total).
  virtual std::uint64_t bytes_read() const = 0;
  virtual std::uint64_t file_size() const = 0;
};

}  // namespace mcinfer::data
