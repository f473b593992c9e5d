#pragma once
// Writes a final prediction table (what `run` ends with and what `merge` writes) in any output
// format: CSV and JSONL through predictions.h, Parquet through parquet_tables.cc (which writer
// serves which format is formats.h's table). The table is
// written to a temporary file beside the target and appears whole on commit() (fsync, rename),
// or not at all.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>

#include "data/formats.h"
#include "data/predictions.h"

namespace mcinfer::data {

// What a writer may know of the rows before the first one (Parquet fixes its schema then).
struct TableFacts {
  // Every id is a JSON number or a row number whose text is a canonical int64 (digits, an
  // optional '-', no leading zeros): Parquet then writes `id` as int64, else as a string.
  bool integer_ids = false;
};

// Whether `id` is the decimal text of an int64 exactly as to_chars writes it (no '+', no
// leading zeros, no "-0"), so that it reads back as the same text.
bool is_canonical_int64(std::string_view id);

class PredictionWriter {
 public:
  virtual ~PredictionWriter() = default;  // uncommitted: the temporary file is removed

  // Throws UsageError for a schema the format cannot hold, Error for I/O failures (naming the
  // file), and, for Parquet in a build without Arrow, an Error saying how to get it (both from
  // check_table_format).
  static std::unique_ptr<PredictionWriter> open(const std::filesystem::path& path,
                                                OutputFormat format, const PredictionSchema& schema,
                                                const TableFacts& facts);

  // One row: values in schema.columns order (JSON numbers are written as their text). A sparse
  // schema's rows come through add_sparse instead.
  virtual void add(std::string_view id, bool id_is_string, std::span<const double> values) = 0;
  // One sparse row (schema.sparse): the nonzeros, indices ascending, written as float32.
  virtual void add_sparse(std::string_view id, bool id_is_string,
                          std::span<const std::int32_t> indices,
                          std::span<const double> values) = 0;
  virtual void commit() = 0;
};

// CSV or JSONL (prediction_writer.cc).
std::unique_ptr<PredictionWriter> make_line_prediction_writer(const std::filesystem::path& path,
                                                              LineFormat format,
                                                              const PredictionSchema& schema);

// parquet_tables.cc (parquet_none.cc without Arrow).
std::unique_ptr<PredictionWriter> make_parquet_prediction_writer(const std::filesystem::path& path,
                                                                 const PredictionSchema& schema,
                                                                 const TableFacts& facts);

}  // namespace mcinfer::data
