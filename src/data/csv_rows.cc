// RowReader for CSV inputs.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>

#include "core/error.h"
#include "data/csv_parser.h"
#include "data/row_readers.h"

namespace mcinfer::data {
namespace {

class CsvRowReader final : public RowReader {
 public:
  CsvRowReader(StreamBuffer in, std::filesystem::path name, const ColumnSpec& columns,
               const ReaderOptions& options)
      : in_(std::move(in)),
        parser_(in_, options.max_row_bytes),
        path_(std::move(name)),
        max_row_(options.max_row_bytes) {
    parser_.skip_bom();
    if (!parser_.next(record_)) fail("{}: empty file: no header row", path_.string());
    if (record_.problem != CsvRecord::Problem::kNone) {
      fail("{}:{}: header: {}", path_.string(), record_.line,
           describe_csv_problem(record_, {}, max_row_));
    }
    header_line_ = record_.line;
    header_.assign(record_.fields.begin(), record_.fields.end());
    id_ = find(columns.id_col, false);
    if (columns.read_text) {
      text_ = find(columns.text_col, true);
      if (columns.text_pair_col) pair_ = find(*columns.text_pair_col, true);
    }
  }

  Result next(Row& row, BadRow& bad) override {
    if (!parser_.next(record_)) return Result::kEnd;
    std::uint64_t index = index_++;
    if (record_.problem != CsvRecord::Problem::kNone) {
      bad = {index, record_.line, describe_csv_problem(record_, header_, max_row_)};
      return Result::kBadRow;
    }
    if (record_.fields.size() != header_.size()) {
      bad = {index, record_.line,
             fmt::format("expected {} fields, got {}", header_.size(), record_.fields.size())};
      return Result::kBadRow;
    }
    row.index = index;
    row.line = record_.line;
    if (id_) {
      row.id.text.assign(record_.fields[*id_]);
      row.id.is_string = true;
    } else {
      set_row_number_id(index, row.id);
    }
    std::optional<std::string_view> text, pair;
    if (text_) text = record_.fields[*text_];
    if (pair_) pair = record_.fields[*pair_];
    set_text_fields(row, text, pair);
    return Result::kRow;
  }

  const std::filesystem::path& path() const override { return path_; }
  std::uint64_t bytes_read() const override { return in_.consumed(); }
  std::uint64_t file_size() const override { return in_.size(); }

 private:
  std::optional<std::size_t> find(const std::string& name, bool required) const {
    std::optional<std::size_t> at;
    for (std::size_t i = 0; i < header_.size(); ++i) {
      if (header_[i] != name) continue;
      if (at) {
        fail("{}:{}: column '{}' appears twice in the header (fields {} and {})", path_.string(),
             header_line_, name, *at + 1, i + 1);
      }
      at = i;
    }
    if (!at && required) {
      fail("{}: no column '{}' in the header (columns found: {})", path_.string(), name,
           fmt::join(header_, ", "));
    }
    return at;
  }

  StreamBuffer in_;
  CsvParser parser_;
  std::filesystem::path path_;
  std::size_t max_row_;
  CsvRecord record_;
  std::vector<std::string> header_;
  std::uint64_t header_line_ = 0;
  std::optional<std::size_t> id_, text_, pair_;
  std::uint64_t index_ = 0;
};

}  // namespace

std::unique_ptr<RowReader> make_csv_row_reader(StreamBuffer in, std::filesystem::path name,
                                               const ColumnSpec& columns,
                                               const ReaderOptions& options) {
  return std::make_unique<CsvRowReader>(std::move(in), std::move(name), columns, options);
}

}  // namespace mcinfer::data
