#pragma once
// What parquet_rows.cc and parquet_tables.cc share: Arrow's Status and Result turned into
// mcinfer Errors naming the file, opening a Parquet file, and reading a text-like column
// (string, large_string, string_view, dictionary of them, or integers as their decimal text).
// Only those two files include it: nothing else in mcinfer sees an Arrow header.

#include <arrow/api.h>
#include <arrow/io/interfaces.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/exception.h>

#include <charconv>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/file_writer.h"

namespace mcinfer::data {
class PredictionReader;
class PredictionWriter;
}  // namespace mcinfer::data

namespace mcinfer::data::parquet_io {

[[noreturn]] inline void fail_arrow(const std::filesystem::path& path, std::string_view what,
                                    const arrow::Status& status) {
  fail("{}: {}: {}", path.string(), what, status.message());
}

inline void check(const arrow::Status& status, const std::filesystem::path& path,
                  std::string_view what) {
  if (!status.ok()) fail_arrow(path, what, status);
}

template <typename T>
T take(arrow::Result<T> result, const std::filesystem::path& path, std::string_view what) {
  if (!result.ok()) fail_arrow(path, what, result.status());
  return std::move(result).ValueUnsafe();
}

// `open()` with a parquet::ParquetException turned into an Error naming the file: Arrow's API
// returns Status, but the file metadata it hands out (row groups, column chunks) is decoded
// lazily by the Parquet library, which throws on a malformed footer.
template <typename Open>
auto guard_metadata(const std::filesystem::path& path, Open&& open) -> decltype(open()) {
  try {
    return open();
  } catch (const parquet::ParquetException& e) {
    fail("{}: malformed Parquet metadata: {}", path.string(), e.what());
  }
}

// A reader over `path` (its batch size is the caller's to set: it depends on the rows). Throws
// Error naming the file when it cannot be opened or is not Parquet.
std::unique_ptr<parquet::arrow::FileReader> open_reader(const std::filesystem::path& path);

// Where a reader is in a stream of record batches: the batch being read (kept alive, since the
// columns bound to it point into it) and its next row. Every batch is checked in full before any
// value is read through its offsets, dictionary indices or list sizes: the file is untrusted, and
// a malformed one must be an Error naming it (and the row the batch follows), not a read out of
// bounds. Used by one reader on one thread.
class BatchCursor {
 public:
  BatchCursor() = default;
  explicit BatchCursor(std::unique_ptr<arrow::RecordBatchReader> batches)
      : batches_(std::move(batches)) {}

  explicit operator bool() const { return batches_ != nullptr; }

  // The next row's index in the current batch, or -1 at the end of the stream. When that row is
  // in a batch not read before, `bind(batch)` is called first (the caller's columns follow it).
  // `rows_before` (the rows read so far) names the place in errors.
  template <typename Bind>
  std::int64_t next_row(const std::filesystem::path& path, std::uint64_t rows_before, Bind&& bind) {
    while (at_ >= rows_) {
      if (!advance(path, rows_before)) return -1;
      bind(*batch_);
    }
    return at_++;
  }

 private:
  bool advance(const std::filesystem::path& path, std::uint64_t rows_before);

  std::unique_ptr<arrow::RecordBatchReader> batches_;
  std::shared_ptr<arrow::RecordBatch> batch_;
  std::int64_t rows_ = 0;  // in batch_
  std::int64_t at_ = 0;    // the next row of batch_
};

// The leaf column of top-level field `name`, or -1 when the file has no such field. Throws
// Error naming the file and column when the name appears twice or the field is nested.
int leaf_column(const parquet::arrow::FileReader& reader, const std::filesystem::path& path,
                const std::string& name);

// Arrow's output stream over an AtomicFile's writer: the same temporary file, fsync and
// rename as the line formats. An I/O error keeps its own message (the file, the cause).
class AtomicStream final : public arrow::io::OutputStream {
 public:
  explicit AtomicStream(FileWriter& out) : out_(out) {}
  arrow::Status Close() override {
    closed_ = true;
    return arrow::Status::OK();
  }
  bool closed() const override { return closed_; }
  arrow::Result<std::int64_t> Tell() const override {
    return static_cast<std::int64_t>(out_.offset());
  }
  arrow::Status Write(const void* data, std::int64_t nbytes) override {
    try {
      out_.write(
          std::string_view(static_cast<const char*>(data), static_cast<std::size_t>(nbytes)));
    } catch (const std::exception& e) {
      error_ = std::current_exception();
      return arrow::Status::IOError(e.what());
    }
    return arrow::Status::OK();
  }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  FileWriter& out_;
  bool closed_ = false;
  std::exception_ptr error_;
};

// Whether the table's schema is a sparse prediction table's: a list column `indices` or
// `values` (parquet_sparse.cc reads it, and refuses any other column).
bool is_sparse_table(parquet::arrow::FileReader& reader, const std::filesystem::path& path);

// One column of a record batch read as text: strings as they are, integers as decimal text.
class TextColumn {
 public:
  // Whether a column of this type can be read (as text, or as integer ids when `ids`).
  static bool readable(const arrow::DataType& type, bool ids);
  // "string, large_string, string_view or a dictionary of them": for messages.
  static std::string_view kinds(bool ids);

  void bind(const std::shared_ptr<arrow::Array>& array);
  bool is_null(std::int64_t i) const { return array_->IsNull(i); }
  bool is_integer() const { return kind_ == Kind::kInt || kind_ == Kind::kUInt; }
  // Row i's text (not null); integers are formatted into `scratch`.
  std::string_view text(std::int64_t i, std::string& scratch) const;

 private:
  enum class Kind { kString, kLargeString, kStringView, kDictionary, kInt, kUInt };
  std::shared_ptr<arrow::Array> array_;
  const arrow::Array* values_ = nullptr;  // the dictionary's values, else array_
  Kind kind_ = Kind::kString;
};

}  // namespace mcinfer::data::parquet_io

namespace mcinfer::data {

// parquet_sparse.cc: sparse prediction tables (`indices` list<int32>, `values` list<float32>).
std::unique_ptr<PredictionReader> make_sparse_parquet_reader(
    const std::filesystem::path& path, std::unique_ptr<parquet::arrow::FileReader> reader);
std::unique_ptr<PredictionWriter> make_sparse_parquet_writer(const std::filesystem::path& path,
                                                             bool integer_ids);

}  // namespace mcinfer::data
