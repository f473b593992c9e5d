#pragma once
// Reads prediction tables back (what predictions.h writes, or any CSV with an id column and
// numeric columns): shards and outputs for `merge`, and shards for `run --resume`.
//
// Every value must be a finite number. A malformed row throws Error "file:line: reason",
// except the last line of a file that does not end with a line break: that is a row torn by
// a killed writer, and it is dropped with a warning (when it spans one line; a record that
// runs over several lines to the end of the file is an error). A last line without a line
// break that does parse is kept, with a warning, since it may have lost trailing digits.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "data/predictions.h"
#include "data/rows.h"

namespace mcinfer::data {

struct PredictionRow {
  std::uint64_t line = 0;
  std::string_view id;             // valid until the next call
  bool id_is_string = true;        // false for JSON numbers (kept as spelled)
  std::span<const double> values;  // in schema().columns order; valid until the next call
  // Sparse tables (schema().sparse): the nonzeros' indices, strictly ascending, each with its
  // value in `values`; empty otherwise.
  std::span<const std::int32_t> indices;
};

class PredictionReader {
 public:
  virtual ~PredictionReader() = default;

  // The format comes from `format`, else the extension. Parquet (builds with Arrow): an `id`
  // column (string or integer) and float32/float64 columns, or fixed_size_list<float> columns
  // (one named `embedding`: an embedding; one named after an output group: that group's
  // columns `<group>.e<i>`), as parquet_tables.h writes them; a null or a NaN is an Error
  // naming the file, row and column. CSV: the header's `id` column holds
  // ids and every other column values (columns named e0..e{d-1} are an embedding). JSONL:
  // the first row's keys define the columns (or its "embedding" array); later rows must
  // have the same keys, in any order. Sparse rows ({"id", "indices", "values"} in JSONL, list
  // columns `indices` and `values` in Parquet) make a sparse schema: indices are integers in
  // [0, 2^31 - 1], strictly ascending, as many as the values (else an Error naming the row).
  static std::unique_ptr<PredictionReader> open(const std::filesystem::path& path,
                                                std::optional<OutputFormat> format,
                                                const ReaderOptions& options = {});
  static std::unique_ptr<PredictionReader> open_bytes(std::string_view bytes,
                                                      const std::filesystem::path& name,
                                                      LineFormat format,
                                                      const ReaderOptions& options = {});

  // False for an empty file (or one whose only line is torn): no columns and no rows.
  virtual bool has_schema() const = 0;
  virtual const PredictionSchema& schema() const = 0;
  virtual OutputFormat format() const = 0;
  virtual const std::filesystem::path& path() const = 0;
  // The next row, or false at the end.
  virtual bool next(PredictionRow& row) = 0;
  // Set once the end is reached when the last line was torn (dropped) or unterminated.
  virtual const std::optional<std::string>& warning() const = 0;
};

// CSV or JSONL (prediction_reader.cc).
std::unique_ptr<PredictionReader> open_line_prediction_reader(const std::filesystem::path& path,
                                                              LineFormat format,
                                                              const ReaderOptions& options);

// parquet_tables.cc (parquet_none.cc without Arrow: an Error saying so).
std::unique_ptr<PredictionReader> make_parquet_prediction_reader(const std::filesystem::path& path);

}  // namespace mcinfer::data
