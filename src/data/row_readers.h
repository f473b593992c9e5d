#pragma once
// The RowReader implementations, behind RowReader::open.

#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

#include "data/rows.h"
#include "data/stream_buffer.h"

namespace mcinfer::data {

std::unique_ptr<RowReader> make_csv_row_reader(StreamBuffer in, std::filesystem::path name,
                                               const ColumnSpec& columns,
                                               const ReaderOptions& options);
std::unique_ptr<RowReader> make_jsonl_row_reader(StreamBuffer in, std::filesystem::path name,
                                                 const ColumnSpec& columns,
                                                 const ReaderOptions& options);
// Parquet (parquet_rows.cc; parquet_none.cc in builds without Arrow: an Error saying so).
std::unique_ptr<RowReader> make_parquet_row_reader(const std::filesystem::path& path,
                                                   const ColumnSpec& columns,
                                                   const ReaderOptions& options);

// The decimal text of a row number, for rows without an id.
void set_row_number_id(std::uint64_t index, RowId& id);

// Makes `row` a text row (not pre-tokenised) of `text` (nullopt: no text column read, empty
// text) and `pair` (nullopt: no pair column), reusing the row's buffers.
void set_text_fields(Row& row, std::optional<std::string_view> text,
                     std::optional<std::string_view> pair);

}  // namespace mcinfer::data
