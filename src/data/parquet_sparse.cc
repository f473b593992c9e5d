// Sparse prediction tables in Parquet (--task sparse): `id` (int64 or string, as for dense
// tables), `indices` list<int32> and `values` list<float32>, one row per id with its nonzeros,
// the indices ascending. The two lists of a row share their offsets (one buffer), so the row's
// i-th index and i-th value are a pair. Read back (merge) with the same checks as the JSONL
// rows: indices in [0, 2^31 - 1] and strictly ascending, as many as the values, values finite.

#include <fmt/format.h>
#include <parquet/arrow/writer.h>

#include <cmath>

#include "data/parquet_arrow.h"
#include "data/parquet_table_reader.h"
#include "data/prediction_reader.h"
#include "data/prediction_writer.h"

namespace mcinfer::data {
namespace {

using parquet_io::check;
using parquet_io::take;

constexpr std::string_view kIndices = "indices";
constexpr std::string_view kValues = "values";
// A record batch (and row group) ends at this many rows or nonzeros, whichever comes first:
// 32 MiB of indices and values at most, whatever the rows' widths, and offsets far from int32's.
constexpr std::size_t kBatchRows = std::size_t{1} << 16;
constexpr std::size_t kBatchEntries = std::size_t{1} << 22;

// Items named "element", as the Parquet format names a list's items (what readers then show).
std::shared_ptr<arrow::DataType> list_of(std::shared_ptr<arrow::DataType> item) {
  return arrow::list(arrow::field("element", std::move(item), false));
}

class SparseParquetWriter final : public PredictionWriter {
 public:
  SparseParquetWriter(const std::filesystem::path& path, bool integer_ids)
      : path_(path),
        file_(path),
        stream_(std::make_shared<parquet_io::AtomicStream>(file_.writer())),
        integer_ids_(integer_ids) {
    schema_ =
        arrow::schema({arrow::field("id", integer_ids_ ? arrow::int64() : arrow::utf8(), false),
                       arrow::field(std::string(kIndices), list_of(arrow::int32()), false),
                       arrow::field(std::string(kValues), list_of(arrow::float32()), false)});
    auto properties = parquet::WriterProperties::Builder()
                          .disable_dictionary()
                          ->disable_statistics()
                          ->enable_statistics("id")
                          ->max_row_group_length(static_cast<std::int64_t>(kBatchRows))
                          ->build();
    auto arrow_properties = parquet::ArrowWriterProperties::Builder().store_schema()->build();
    writer_ = take(parquet::arrow::FileWriter::Open(*schema_, arrow::default_memory_pool(), stream_,
                                                    properties, arrow_properties),
                   path_, "cannot start the Parquet file");
    reset();
  }

  void add(std::string_view, bool, std::span<const double>) override {
    fail("internal: {}: a dense row for a sparse Parquet table", path_.string());
  }

  void add_sparse(std::string_view id, bool, std::span<const std::int32_t> indices,
                  std::span<const double> values) override {
    if (integer_ids_) {
      std::int64_t v = 0;
      std::from_chars(id.data(), id.data() + id.size(), v);
      int_ids_.push_back(v);
    } else {
      check(string_ids_.Append(id), path_, "cannot buffer an id");
    }
    indices_.insert(indices_.end(), indices.begin(), indices.end());
    for (double v : values) values_.push_back(static_cast<float>(v));
    offsets_.push_back(static_cast<std::int32_t>(indices_.size()));
    if (++rows_ == kBatchRows || indices_.size() >= kBatchEntries) flush();
  }

  void commit() override {
    if (rows_ > 0) flush();
    guard(writer_->Close(), "cannot finish the Parquet file");
    file_.commit();
  }

 private:
  void guard(const arrow::Status& status, std::string_view what) {
    if (status.ok()) return;
    stream_->rethrow();
    parquet_io::fail_arrow(path_, what, status);
  }

  void reset() {
    int_ids_.clear();
    indices_.clear();
    values_.clear();
    offsets_.assign(1, 0);
    rows_ = 0;
  }

  void flush() {
    const auto n = static_cast<std::int64_t>(rows_);
    const auto entries = static_cast<std::int64_t>(indices_.size());
    arrow::ArrayVector columns;
    if (integer_ids_) {
      columns.push_back(
          std::make_shared<arrow::Int64Array>(n, arrow::Buffer::FromVector(std::move(int_ids_))));
      int_ids_ = {};
    } else {
      columns.push_back(take(string_ids_.Finish(), path_, "cannot build the ids"));
    }
    const auto offsets = arrow::Buffer::FromVector(std::move(offsets_));
    auto indices = std::make_shared<arrow::Int32Array>(
        entries, arrow::Buffer::FromVector(std::move(indices_)));
    auto values =
        std::make_shared<arrow::FloatArray>(entries, arrow::Buffer::FromVector(std::move(values_)));
    columns.push_back(
        std::make_shared<arrow::ListArray>(schema_->field(1)->type(), n, offsets, indices));
    columns.push_back(
        std::make_shared<arrow::ListArray>(schema_->field(2)->type(), n, offsets, values));
    auto batch = arrow::RecordBatch::Make(schema_, n, std::move(columns));
    guard(writer_->WriteRecordBatch(*batch), "cannot write a row group");
    offsets_ = {};
    indices_ = {};
    values_ = {};
    reset();
  }

  std::filesystem::path path_;
  AtomicFile file_;
  std::shared_ptr<parquet_io::AtomicStream> stream_;
  bool integer_ids_;
  std::shared_ptr<arrow::Schema> schema_;
  std::unique_ptr<parquet::arrow::FileWriter> writer_;
  std::size_t rows_ = 0;
  arrow::StringBuilder string_ids_;
  std::vector<std::int64_t> int_ids_;
  std::vector<std::int32_t> offsets_;  // rows + 1, into indices_ and values_ alike
  std::vector<std::int32_t> indices_;
  std::vector<float> values_;
};

bool is_int_type(const arrow::DataType& t) {
  return t.id() == arrow::Type::INT32 || t.id() == arrow::Type::INT64;
}
bool is_float_type(const arrow::DataType& t) {
  return t.id() == arrow::Type::FLOAT || t.id() == arrow::Type::DOUBLE;
}

// A sparse table written as above, or by another tool: `indices` a list of int32 or int64,
// `values` a list of float32 or float64.
class SparseParquetReader final : public parquet_io::TableReader {
 public:
  SparseParquetReader(const std::filesystem::path& path,
                      std::unique_ptr<parquet::arrow::FileReader> reader)
      : TableReader(path, std::move(reader)) {
    std::shared_ptr<arrow::Schema> schema;
    check(reader_->GetSchema(&schema), path_, "cannot read the schema");
    check_field(
        *schema, "id",
        [](const arrow::DataType& t) { return parquet_io::TextColumn::readable(t, true); },
        parquet_io::TextColumn::kinds(true));
    check_field(
        *schema, kIndices,
        [](const arrow::DataType& t) {
          return t.id() == arrow::Type::LIST &&
                 is_int_type(*static_cast<const arrow::ListType&>(t).value_type());
        },
        "a list of int32 or int64");
    check_field(
        *schema, kValues,
        [](const arrow::DataType& t) {
          return t.id() == arrow::Type::LIST &&
                 is_float_type(*static_cast<const arrow::ListType&>(t).value_type());
        },
        "a list of float32 or float64");
    for (const auto& field : schema->fields()) {
      if (field->name() != "id" && field->name() != kIndices && field->name() != kValues)
        fail("{}: column '{}': a sparse table has the columns id, indices and values only",
             path_.string(), field->name());
    }
    schema_.sparse = true;
    reader_->set_batch_size(kReadRows);
    start();
  }

 private:
  static constexpr std::int64_t kReadRows = 8192;

  void read_values(std::int64_t i, std::uint64_t number, PredictionRow& row) override {
    if (indices_->IsNull(i) || values_->IsNull(i))
      fail("{}: row {}: column '{}' is null", path_.string(), number,
           indices_->IsNull(i) ? kIndices : kValues);
    const std::int64_t n = indices_->value_length(i);
    if (values_->value_length(i) != n)
      fail("{}: row {}: 'indices' has {} items and 'values' {}: one value per index",
           path_.string(), number, n, values_->value_length(i));
    read_indices(number, indices_->value_offset(i), n);
    read_weights(number, values_->value_offset(i), n);
    row.indices = row_indices_;
    row.values = row_values_;
  }

  template <typename Accepts>
  void check_field(const arrow::Schema& schema, std::string_view name, Accepts accepts,
                   std::string_view expected) {
    const auto fields = schema.GetAllFieldsByName(std::string(name));
    if (fields.size() != 1) {
      fail("{}: {} column '{}' (columns found: {})", path_.string(),
           fields.empty() ? "no" : "more than one", name, fmt::join(schema.field_names(), ", "));
    }
    if (!accepts(*fields[0]->type())) {
      fail("{}: column '{}' is of type {}; expected {}", path_.string(), name,
           fields[0]->type()->ToString(), expected);
    }
  }

  void bind_values(const arrow::RecordBatch& batch) override {
    indices_ =
        std::static_pointer_cast<arrow::ListArray>(batch.GetColumnByName(std::string(kIndices)));
    values_ =
        std::static_pointer_cast<arrow::ListArray>(batch.GetColumnByName(std::string(kValues)));
  }

  void read_indices(std::uint64_t number, std::int64_t first, std::int64_t n) {
    const arrow::Array& items = *indices_->values();
    row_indices_.clear();
    for (std::int64_t k = 0; k < n; ++k) {
      if (items.IsNull(first + k))
        fail("{}: row {}: indices[{}] is null", path_.string(), number, k);
      const std::int64_t v = items.type_id() == arrow::Type::INT32
                                 ? static_cast<const arrow::Int32Array&>(items).Value(first + k)
                                 : static_cast<const arrow::Int64Array&>(items).Value(first + k);
      if (v < 0 || v > kMaxSparseIndex)
        fail("{}: row {}: indices[{}]: {} is not in [0, {}]", path_.string(), number, k, v,
             kMaxSparseIndex);
      if (k > 0 && v <= row_indices_.back())
        fail("{}: row {}: indices[{}]: {} after {}: indices must ascend", path_.string(), number, k,
             v, row_indices_.back());
      row_indices_.push_back(static_cast<std::int32_t>(v));
    }
  }

  void read_weights(std::uint64_t number, std::int64_t first, std::int64_t n) {
    const arrow::Array& items = *values_->values();
    row_values_.clear();
    for (std::int64_t k = 0; k < n; ++k) {
      if (items.IsNull(first + k))
        fail("{}: row {}: values[{}] is null", path_.string(), number, k);
      const double v = items.type_id() == arrow::Type::FLOAT
                           ? static_cast<const arrow::FloatArray&>(items).Value(first + k)
                           : static_cast<const arrow::DoubleArray&>(items).Value(first + k);
      if (!std::isfinite(v))
        fail("{}: row {}: values[{}]: {} is not a finite number", path_.string(), number, k, v);
      row_values_.push_back(v);
    }
  }

  std::shared_ptr<arrow::ListArray> indices_, values_;  // of the current batch
  std::vector<std::int32_t> row_indices_;
  std::vector<double> row_values_;
};

}  // namespace

namespace parquet_io {

bool is_sparse_table(parquet::arrow::FileReader& reader, const std::filesystem::path& path) {
  std::shared_ptr<arrow::Schema> schema;
  check(reader.GetSchema(&schema), path, "cannot read the schema");
  for (const auto& field : schema->fields()) {
    if ((field->name() == kIndices || field->name() == kValues) &&
        field->type()->id() == arrow::Type::LIST)
      return true;
  }
  return false;
}

}  // namespace parquet_io

std::unique_ptr<PredictionReader> make_sparse_parquet_reader(
    const std::filesystem::path& path, std::unique_ptr<parquet::arrow::FileReader> reader) {
  return std::make_unique<SparseParquetReader>(path, std::move(reader));
}

std::unique_ptr<PredictionWriter> make_sparse_parquet_writer(const std::filesystem::path& path,
                                                             bool integer_ids) {
  return std::make_unique<SparseParquetWriter>(path, integer_ids);
}

}  // namespace mcinfer::data
