#pragma once
// Streaming readers for the input rows of a run: CSV (RFC 4180) and JSONL. Memory use is
// bounded by the largest row, never by the file.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mcinfer::data {

enum class Format { kCsv, kJsonl };

// From --format when given ("csv" or "jsonl"), else from the file's extension
// (.csv, .tsv is not supported; .jsonl, .json, .ndjson). Throws UsageError otherwise.
Format resolve_format(const std::filesystem::path& path, const std::optional<std::string>& flag);

struct ColumnSpec {
  std::string id_col = "id";
  std::string text_col = "text";
  std::optional<std::string> text_pair_col;
};

// An id exactly as read: CSV fields are strings; JSON ids keep their kind and, for numbers,
// their original spelling. Ids compare as exact text.
struct RowId {
  std::string text;      // the string's content, or the number's text as written
  bool is_string = true; // false for JSON numbers and for row-number ids
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
  static std::unique_ptr<RowReader> open(const std::filesystem::path& path, Format format,
                                         const ColumnSpec& columns);

  enum class Result { kRow, kBadRow, kEnd };
  // Reads the next row into `row` (kRow), or describes a malformed one in `bad` (kBadRow; the
  // caller decides whether to stop, --on-bad-row error, or go on, skip), or kEnd.
  // I/O failures throw Error.
  virtual Result next(Row& row, BadRow& bad) = 0;

  virtual const std::filesystem::path& path() const = 0;
  // Bytes consumed so far, for progress.
  virtual std::uint64_t bytes_read() const = 0;
  virtual std::uint64_t file_size() const = 0;
};

}  // namespace mcinfer::data
