// RowReader for Parquet inputs: one record batch of the needed columns at a time (the id, text
// and text-pair columns, found by name), so memory is bounded by a batch, not by the file.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "data/csv_parser.h"  // format_byte_size
#include "data/parquet_arrow.h"
#include "data/row_readers.h"

namespace mcinfer::data {
namespace {

using parquet_io::TextColumn;

constexpr std::int64_t kBatchRows = 8192;
// A record batch holds about this many bytes of the columns read, at most (fewer rows per batch
// when the file's rows are long): memory stays bounded by the batch, whatever the rows.
constexpr std::uint64_t kBatchBytes = std::uint64_t{64} << 20;

class ParquetRowReader final : public RowReader {
 public:
  ParquetRowReader(const std::filesystem::path& path, const ColumnSpec& columns,
                   const ReaderOptions& options)
      : path_(path), reader_(parquet_io::open_reader(path)), max_row_(options.max_row_bytes) {
    std::shared_ptr<arrow::Schema> schema;
    parquet_io::check(reader_->GetSchema(&schema), path_, "cannot read the schema");
    id_ = find(*schema, columns.id_col, false, true);
    if (columns.read_text) {
      text_ = find(*schema, columns.text_col, true, false);
      if (columns.text_pair_col) pair_ = find(*schema, *columns.text_pair_col, true, false);
    }
    plan_progress();
    reader_->set_batch_size(batch_rows_for_row_size());
    std::vector<int> leaves;
    for (const auto& c : {id_, text_, pair_})
      if (c && std::find(leaves.begin(), leaves.end(), c->leaf) == leaves.end())
        leaves.push_back(c->leaf);
    std::vector<int> groups(static_cast<std::size_t>(reader_->num_row_groups()));
    for (std::size_t g = 0; g < groups.size(); ++g) groups[g] = static_cast<int>(g);
    // No column at all (neither ids nor text wanted, and no id column): rows are counted from
    // the metadata alone.
    if (leaves.empty()) return;
    batches_ = parquet_io::BatchCursor(parquet_io::take(
        reader_->GetRecordBatchReader(groups, leaves), path_, "cannot read its row groups"));
  }

  Result next(Row& row, BadRow& bad) override {
    if (!batches_) {
      if (index_ >= total_rows()) return Result::kEnd;
      row = Row{};
      row.index = index_++;
      row.line = row.index + 1;
      set_row_number_id(row.index, row.id);
      return Result::kRow;
    }
    const std::int64_t i =
        batches_.next_row(path_, index_, [&](const arrow::RecordBatch& batch) { bind(batch); });
    if (i < 0) return Result::kEnd;
    const std::uint64_t index = index_++;
    if (auto problem = null_column(i)) {
      bad = {index, index + 1, fmt::format("column '{}' is null in row {}", *problem, index + 1)};
      return Result::kBadRow;
    }
    // Text and pair come from string columns, which never use scratch_ (integer ids do).
    std::optional<std::string_view> text, pair;
    if (text_) text = text_->column.text(i, scratch_);
    if (pair_) pair = pair_->column.text(i, scratch_);
    const std::size_t bytes = (text ? text->size() : 0) + (pair ? pair->size() : 0);
    if (bytes > max_row_) {
      bad = {index, index + 1, fmt::format("row larger than {}", format_byte_size(max_row_))};
      return Result::kBadRow;
    }
    row.index = index;
    row.line = index + 1;
    if (id_) {
      row.id.text.assign(id_->column.text(i, scratch_));
      row.id.is_string = !id_->column.is_integer();
    } else {
      set_row_number_id(index, row.id);
    }
    set_text_fields(row, text, pair);
    return Result::kRow;
  }

  const std::filesystem::path& path() const override { return path_; }

  // Uncompressed bytes of the columns read: the row groups done, and the part of the current
  // one its rows done make.
  std::uint64_t bytes_read() const override {
    while (group_ < groups_.size() && index_ >= groups_[group_].first_row + groups_[group_].rows)
      ++group_;
    if (group_ >= groups_.size()) return total_bytes_;
    const RowGroup& g = groups_[group_];
    const double part =
        g.rows == 0 ? 0.0 : static_cast<double>(index_ - g.first_row) / static_cast<double>(g.rows);
    return g.first_byte + static_cast<std::uint64_t>(part * static_cast<double>(g.bytes));
  }
  std::uint64_t file_size() const override { return total_bytes_; }

 private:
  // A row group's rows and the uncompressed bytes of the columns read, and where both start.
  struct RowGroup {
    std::uint64_t first_row = 0, rows = 0;
    std::uint64_t first_byte = 0, bytes = 0;
  };

  struct Column {
    std::string name;
    int leaf = -1;
    TextColumn column;
  };

  std::optional<Column> find(const arrow::Schema& schema, const std::string& name, bool required,
                             bool ids) const {
    const int leaf = parquet_io::leaf_column(*reader_, path_, name);
    if (leaf < 0) {
      if (!required) return std::nullopt;
      fail("{}: no column '{}' in the schema (columns found: {})", path_.string(), name,
           fmt::join(schema.field_names(), ", "));
    }
    const auto field = schema.GetFieldByName(name);
    if (!field || !TextColumn::readable(*field->type(), ids)) {
      fail("{}: column '{}' is of type {}; expected {}", path_.string(), name,
           field ? field->type()->ToString() : "?", TextColumn::kinds(ids));
    }
    return Column{name, leaf, {}};
  }

  void plan_progress() {
    const auto metadata = reader_->parquet_reader()->metadata();
    std::uint64_t rows = 0, bytes = 0;
    for (int g = 0; g < metadata->num_row_groups(); ++g) {
      const auto group = metadata->RowGroup(g);
      RowGroup facts{.first_row = rows,
                     .rows = static_cast<std::uint64_t>(group->num_rows()),
                     .first_byte = bytes};
      for (const auto& c : {id_, text_, pair_}) {
        if (!c) continue;
        const std::int64_t size = group->ColumnChunk(c->leaf)->total_uncompressed_size();
        if (size < 0) {
          fail("{}: malformed Parquet metadata: column '{}' claims {} bytes in row group {}",
               path_.string(), c->name, size, g);
        }
        facts.bytes += static_cast<std::uint64_t>(size);
      }
      rows += facts.rows;
      bytes += facts.bytes;
      groups_.push_back(facts);
    }
    total_bytes_ = bytes;
    if (total_bytes_ == 0) {
      std::error_code ec;
      total_bytes_ = std::max<std::uint64_t>(1, std::filesystem::file_size(path_, ec));
    }
  }

  std::uint64_t total_rows() const {
    return groups_.empty() ? 0 : groups_.back().first_row + groups_.back().rows;
  }

  // Rows per record batch: kBatchRows, fewer when the widest row group's rows average more than
  // kBatchBytes / kBatchRows bytes in the columns read.
  std::int64_t batch_rows_for_row_size() const {
    std::uint64_t widest = 1;
    for (const RowGroup& g : groups_)
      if (g.rows > 0) widest = std::max(widest, g.bytes / g.rows);
    return static_cast<std::int64_t>(
        std::clamp<std::uint64_t>(kBatchBytes / widest, 1, kBatchRows));
  }

  void bind(const arrow::RecordBatch& batch) {
    for (auto* c : {&id_, &text_, &pair_}) {
      if (!*c) continue;
      auto array = batch.GetColumnByName((*c)->name);
      if (!array) fail("{}: internal: column '{}' not read", path_.string(), (*c)->name);
      (*c)->column.bind(array);
    }
  }

  // The first of the columns read that is null in row i of the batch.
  std::optional<std::string> null_column(std::int64_t i) const {
    for (const auto* c : {&id_, &text_, &pair_})
      if (*c && (*c)->column.is_null(i)) return (*c)->name;
    return std::nullopt;
  }

  std::filesystem::path path_;
  std::unique_ptr<parquet::arrow::FileReader> reader_;
  parquet_io::BatchCursor batches_;  // empty when no column is read
  std::optional<Column> id_, text_, pair_;
  std::string scratch_;
  std::size_t max_row_;  // text + pair bytes of a row; a longer one is a bad row
  std::uint64_t index_ = 0;
  std::vector<RowGroup> groups_;   // progress and batch size
  mutable std::size_t group_ = 0;  // the group of the row being read, for bytes_read()
  std::uint64_t total_bytes_ = 0;
};

}  // namespace

std::unique_ptr<RowReader> make_parquet_row_reader(const std::filesystem::path& path,
                                                   const ColumnSpec& columns,
                                                   const ReaderOptions& options) {
  return parquet_io::guard_metadata(
      path, [&] { return std::make_unique<ParquetRowReader>(path, columns, options); });
}

}  // namespace mcinfer::data
