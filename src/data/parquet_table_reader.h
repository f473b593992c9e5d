#pragma once
// What the two Parquet prediction readers share (parquet_tables.cc: one value per column or a
// fixed_size_list; parquet_sparse.cc: `indices` and `values` lists): the file and its row
// batches, the `id` column, the rows' count and numbers, the schema and the accessors. A reader
// checks its schema and sets the batch size in its constructor, then calls start(); it reads a
// batch's value columns in bind_values and a row's values in read_values.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "data/parquet_arrow.h"
#include "data/prediction_reader.h"

namespace mcinfer::data::parquet_io {

class TableReader : public PredictionReader {
 public:
  bool has_schema() const override { return true; }
  const PredictionSchema& schema() const override { return schema_; }
  OutputFormat format() const override { return OutputFormat::kParquet; }
  const std::filesystem::path& path() const override { return path_; }
  const std::optional<std::string>& warning() const override { return warning_; }

  bool next(PredictionRow& row) final {
    const std::int64_t i = batches_.next_row(path_, rows_, [&](const arrow::RecordBatch& batch) {
      id_.bind(batch.GetColumnByName("id"));
      bind_values(batch);
    });
    if (i < 0) return false;
    const std::uint64_t number = ++rows_;
    if (id_.is_null(i)) fail("{}: row {}: column 'id' is null", path_.string(), number);
    row.line = number;
    row.id = id_.text(i, id_scratch_);
    row.id_is_string = !id_.is_integer();
    read_values(i, number, row);
    return true;
  }

 protected:
  TableReader(const std::filesystem::path& path, std::unique_ptr<parquet::arrow::FileReader> reader)
      : path_(path), reader_(std::move(reader)) {}

  // Row batches from here on (the schema checked and the batch size set).
  void start() {
    batches_ =
        BatchCursor(take(reader_->GetRecordBatchReader(), path_, "cannot read its row groups"));
  }
  // The value columns of a new batch.
  virtual void bind_values(const arrow::RecordBatch& batch) = 0;
  // Row `i` of the current batch (row `number` of the file, for messages) into row's values.
  virtual void read_values(std::int64_t i, std::uint64_t number, PredictionRow& row) = 0;

  std::filesystem::path path_;
  std::unique_ptr<parquet::arrow::FileReader> reader_;
  PredictionSchema schema_;
  std::optional<std::string> warning_;

 private:
  BatchCursor batches_;
  std::uint64_t rows_ = 0;
  TextColumn id_;
  std::string id_scratch_;
};

}  // namespace mcinfer::data::parquet_io
