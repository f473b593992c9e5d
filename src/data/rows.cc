#include <algorithm>
#include <cctype>
#include <charconv>

#include "core/error.h"
#include "data/row_readers.h"
#include "data/rows.h"

namespace mcinfer::data {

Format resolve_format(const std::filesystem::path& path, const std::optional<std::string>& flag) {
  if (flag) {
    if (auto format = kFormatNames.parse(*flag)) return *format;
    fail_usage("--format: expected {}, got '{}'", kFormatNames.choices(), *flag);
  }
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".csv") return Format::kCsv;
  if (ext == ".jsonl" || ext == ".json" || ext == ".ndjson") return Format::kJsonl;
  if (ext == ".tsv")
    fail_usage("{}: TSV is not supported; convert it to CSV or JSONL", path.string());
  fail_usage("{}: cannot tell the format from the extension '{}'; use --format csv|jsonl",
             path.string(), ext);
}

void set_row_number_id(std::uint64_t index, RowId& id) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, index);
  id.text.assign(digits, end);
  id.is_string = false;
}

std::unique_ptr<RowReader> RowReader::open(const std::filesystem::path& path, Format format,
                                           const ColumnSpec& columns) {
  return open(path, format, columns, ReaderOptions{});
}

std::unique_ptr<RowReader> RowReader::open(const std::filesystem::path& path, Format format,
                                           const ColumnSpec& columns,
                                           const ReaderOptions& options) {
  StreamBuffer in = StreamBuffer::open_file(path, options.chunk_bytes);
  if (format == Format::kCsv) return make_csv_row_reader(std::move(in), path, columns, options);
  return make_jsonl_row_reader(std::move(in), path, columns, options);
}

std::unique_ptr<RowReader> RowReader::open_bytes(std::string_view bytes,
                                                 const std::filesystem::path& name, Format format,
                                                 const ColumnSpec& columns,
                                                 const ReaderOptions& options) {
  StreamBuffer in = StreamBuffer::from_bytes(bytes, options.chunk_bytes);
  if (format == Format::kCsv) return make_csv_row_reader(std::move(in), name, columns, options);
  return make_jsonl_row_reader(std::move(in), name, columns, options);
}

}  // namespace mcinfer::data
