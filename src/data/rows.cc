#include "data/rows.h"

#include <charconv>

#include "core/error.h"
#include "data/row_readers.h"

namespace mcinfer::data {

void set_row_number_id(std::uint64_t index, RowId& id) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, index);
  id.text.assign(digits, end);
  id.is_string = false;
}

void set_text_fields(Row& row, std::optional<std::string_view> text,
                     std::optional<std::string_view> pair) {
  if (text) {
    row.text.assign(*text);
  } else {
    row.text.clear();
  }
  if (!pair) {
    row.text_pair.reset();
  } else if (row.text_pair) {
    row.text_pair->assign(*pair);
  } else {
    row.text_pair.emplace(*pair);
  }
  row.pretokenized = false;
  row.input_ids.clear();
  row.attention_mask.clear();
  row.token_type_ids.clear();
}

std::unique_ptr<RowReader> RowReader::open(const std::filesystem::path& path, InputFormat format,
                                           const ColumnSpec& columns) {
  return open(path, format, columns, ReaderOptions{});
}

std::unique_ptr<RowReader> RowReader::open(const std::filesystem::path& path, InputFormat format,
                                           const ColumnSpec& columns,
                                           const ReaderOptions& options) {
  switch (format) {
    case InputFormat::kCsv:
      return make_csv_row_reader(StreamBuffer::open_file(path, options.chunk_bytes), path, columns,
                                 options);
    case InputFormat::kJsonl:
      return make_jsonl_row_reader(StreamBuffer::open_file(path, options.chunk_bytes), path,
                                   columns, options);
    case InputFormat::kParquet:
      return make_parquet_row_reader(path, columns, options);
  }
  fail("internal: input format {}", static_cast<int>(format));
}

std::unique_ptr<RowReader> RowReader::open_bytes(std::string_view bytes,
                                                 const std::filesystem::path& name,
                                                 LineFormat format, const ColumnSpec& columns,
                                                 const ReaderOptions& options) {
  StreamBuffer in = StreamBuffer::from_bytes(bytes, options.chunk_bytes);
  switch (format) {
    case LineFormat::kCsv:
      return make_csv_row_reader(std::move(in), name, columns, options);
    case LineFormat::kJsonl:
      return make_jsonl_row_reader(std::move(in), name, columns, options);
  }
  fail("internal: line format {}", static_cast<int>(format));
}

}  // namespace mcinfer::data
