// Prediction tables in Parquet: the writer of final outputs (`run`'s merge step and `merge`)
// and the reader `merge` uses for Parquet inputs.
//
// Layout written: `id` (int64 when every id is a JSON number or row number that is a canonical
// int64, else string), then the values as float32: one column per label (classifiers), one
// fixed_size_list<float32>[D] column `embedding` (embeddings), and with several outputs one
// column per label of a labelled group (`probs.neg`) and one fixed_size_list column per vector
// group (`cls`); sparse rows (--task sparse) as `indices` list<int32> and `values`
// list<float32>, the nonzeros with their indices ascending. The Arrow schema is stored in the file,
// so a list column reads back as a fixed_size_list (pyarrow, pandas, polars, DuckDB read the file
// as it is). No dictionary encoding (ids and values are mostly distinct); statistics for `id` only;
// no compression (float32 embeddings barely compress: all-MiniLM-L6-v2's over 2,795 rows, 4.34 MB,
// shrink by 8% with zstd and 1% with snappy; measured 2026-12-06).

#include <fmt/format.h>
#include <parquet/arrow/writer.h>

#include <cmath>
#include <exception>
#include <unordered_set>

#include "core/file_writer.h"
#include "data/parquet.h"
#include "data/parquet_arrow.h"
#include "data/parquet_table_reader.h"
#include "data/prediction_reader.h"
#include "data/prediction_writer.h"

namespace mcinfer::data {
namespace {

using parquet_io::AtomicStream;
using parquet_io::check;
using parquet_io::take;

constexpr std::size_t kRowGroupBytes = std::size_t{64} << 20;  // of values, before encoding

// One value field of the file: `count` consecutive schema columns from `first`, a float32
// column (count 1) or a fixed_size_list of `count`.
struct ValueField {
  std::string name;
  std::size_t first = 0;
  std::size_t count = 1;
  bool list = false;
};

std::vector<ValueField> value_fields(const PredictionSchema& schema) {
  std::vector<ValueField> fields;
  if (!schema.groups.empty()) {
    std::size_t at = 0;
    for (const OutputGroup& group : schema.groups) {
      if (group.labelled) {
        for (std::size_t i = 0; i < group.count; ++i)
          fields.push_back({schema.columns[at + i], at + i, 1, false});
      } else {
        fields.push_back({group.name, at, group.count, true});
      }
      at += group.count;
    }
    return fields;
  }
  if (schema.embedding) return {{"embedding", 0, schema.columns.size(), true}};
  for (std::size_t i = 0; i < schema.columns.size(); ++i)
    fields.push_back({schema.columns[i], i, 1, false});
  return fields;
}

class ParquetWriter final : public PredictionWriter {
 public:
  ParquetWriter(const std::filesystem::path& path, const PredictionSchema& schema,
                const TableFacts& facts)
      : path_(path),
        file_(path),
        stream_(std::make_shared<AtomicStream>(file_.writer())),
        fields_(value_fields(schema)),
        integer_ids_(facts.integer_ids) {
    arrow::FieldVector arrow_fields = {
        arrow::field("id", integer_ids_ ? arrow::int64() : arrow::utf8(), false)};
    std::unordered_set<std::string> names = {"id"};
    for (const ValueField& f : fields_) {
      if (!names.insert(f.name).second)
        fail_usage("{}: two Parquet columns would be named '{}'", path_.string(), f.name);
      arrow_fields.push_back(arrow::field(
          f.name,
          f.list ? arrow::fixed_size_list(arrow::field("item", arrow::float32(), false),
                                          static_cast<std::int32_t>(f.count))
                 : arrow::float32(),
          false));
    }
    schema_ = arrow::schema(arrow_fields);
    const std::size_t width = std::max<std::size_t>(1, schema.columns.size());
    batch_rows_ = std::clamp<std::size_t>(kRowGroupBytes / (4 * width), 1024, 1 << 20);
    auto properties = parquet::WriterProperties::Builder()
                          .disable_dictionary()
                          ->disable_statistics()
                          ->enable_statistics("id")
                          ->max_row_group_length(static_cast<std::int64_t>(batch_rows_))
                          ->build();
    auto arrow_properties = parquet::ArrowWriterProperties::Builder().store_schema()->build();
    writer_ = take(parquet::arrow::FileWriter::Open(*schema_, arrow::default_memory_pool(), stream_,
                                                    properties, arrow_properties),
                   path_, "cannot start the Parquet file");
    reset_buffers();
  }

  void add_sparse(std::string_view, bool, std::span<const std::int32_t>,
                  std::span<const double>) override {
    fail("internal: {}: a sparse row for a dense Parquet table", path_.string());
  }

  void add(std::string_view id, bool id_is_string, std::span<const double> values) override {
    if (integer_ids_) {
      std::int64_t v = 0;
      std::from_chars(id.data(), id.data() + id.size(), v);
      int_ids_.push_back(v);
    } else {
      check(string_ids_.Append(id), path_, "cannot buffer an id");
    }
    for (std::size_t f = 0; f < fields_.size(); ++f) {
      const ValueField& field = fields_[f];
      std::vector<float>& out = values_[f];
      for (std::size_t c = 0; c < field.count; ++c)
        out.push_back(static_cast<float>(values[field.first + c]));
    }
    if (++rows_ == batch_rows_) flush();
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

  void reset_buffers() {
    values_.assign(fields_.size(), {});
    for (std::size_t f = 0; f < fields_.size(); ++f)
      values_[f].reserve(batch_rows_ * fields_[f].count);
    int_ids_.clear();
    int_ids_.reserve(batch_rows_);
    rows_ = 0;
  }

  void flush() {
    const auto n = static_cast<std::int64_t>(rows_);
    arrow::ArrayVector columns;
    if (integer_ids_) {
      columns.push_back(
          std::make_shared<arrow::Int64Array>(n, arrow::Buffer::FromVector(std::move(int_ids_))));
      int_ids_ = {};
    } else {
      columns.push_back(take(string_ids_.Finish(), path_, "cannot build the ids"));
    }
    for (std::size_t f = 0; f < fields_.size(); ++f) {
      const auto count = static_cast<std::int64_t>(fields_[f].count);
      auto values = std::make_shared<arrow::FloatArray>(
          n * count, arrow::Buffer::FromVector(std::move(values_[f])));
      if (fields_[f].list) {
        columns.push_back(std::make_shared<arrow::FixedSizeListArray>(
            schema_->field(static_cast<int>(f) + 1)->type(), n, values));
      } else {
        columns.push_back(values);
      }
    }
    auto batch = arrow::RecordBatch::Make(schema_, n, std::move(columns));
    guard(writer_->WriteRecordBatch(*batch), "cannot write a row group");
    reset_buffers();
  }

  std::filesystem::path path_;
  AtomicFile file_;
  std::shared_ptr<AtomicStream> stream_;
  std::vector<ValueField> fields_;
  bool integer_ids_;
  std::shared_ptr<arrow::Schema> schema_;
  std::unique_ptr<parquet::arrow::FileWriter> writer_;
  std::size_t batch_rows_ = 0;
  std::size_t rows_ = 0;
  arrow::StringBuilder string_ids_;
  std::vector<std::int64_t> int_ids_;
  std::vector<std::vector<float>> values_;  // per field, rows × count
};

// A prediction table written as above, or by another tool: `id` (text or integers) and value
// columns of float32/float64 or fixed_size_lists of them.
class ParquetPredictionReader final : public parquet_io::TableReader {
 public:
  ParquetPredictionReader(const std::filesystem::path& path,
                          std::unique_ptr<parquet::arrow::FileReader> reader)
      : TableReader(path, std::move(reader)) {
    std::shared_ptr<arrow::Schema> schema;
    check(reader_->GetSchema(&schema), path_, "cannot read the schema");
    if (parquet_io::leaf_column(*reader_, path_, "id") < 0) {
      fail("{}: no column 'id' in the schema (columns found: {})", path_.string(),
           fmt::join(schema->field_names(), ", "));
    }
    for (const auto& field : schema->fields()) {
      if (field->name() == "id") {
        if (!parquet_io::TextColumn::readable(*field->type(), true)) {
          fail("{}: column 'id' is of type {}; expected {}", path_.string(),
               field->type()->ToString(), parquet_io::TextColumn::kinds(true));
        }
        continue;
      }
      add_source(*field);
    }
    if (sources_.empty()) fail("{}: no value columns besides 'id'", path_.string());
    // The schema is untrusted: a fixed_size_list may claim any width, and every value of a row
    // gets a column name and a slot here, so the row's width is bounded before any is made.
    std::int64_t width = 0;
    for (const Source& source : sources_) width += std::max<std::int32_t>(1, source.width);
    if (width > kMaxValuesPerRow) {
      fail("{}: {} values per row; a prediction table has at most {}", path_.string(), width,
           kMaxValuesPerRow);
    }
    // About 4 M values a batch at most (32 MiB as doubles), however wide the rows.
    reader_->set_batch_size(
        std::clamp<std::int64_t>((std::int64_t{1} << 22) / width, 1, kReadRows));
    const bool lone_embedding =
        sources_.size() == 1 && sources_[0].width > 0 && sources_[0].name == "embedding";
    for (const Source& source : sources_) {
      if (source.width == 0) {
        schema_.columns.push_back(source.name);
      } else {
        for (std::int32_t i = 0; i < source.width; ++i)
          schema_.columns.push_back(lone_embedding ? fmt::format("e{}", i)
                                                   : fmt::format("{}.e{}", source.name, i));
      }
    }
    schema_.groups = output_groups_of(schema_.columns);
    schema_.embedding = schema_.groups.empty() && is_embedding_columns(schema_.columns);
    values_.resize(schema_.columns.size());
    start();
  }

 private:
  void read_values(std::int64_t i, std::uint64_t number, PredictionRow& row) override {
    double* out = values_.data();
    for (const Source& source : sources_) {
      if (source.array->IsNull(i) || (source.values_have_nulls && has_null_value(source, i)))
        fail("{}: row {}: column '{}' is null", path_.string(), number, source.name);
      // Row i's first value, as a logical index of the values array (a list's values start at
      // its own offset times the width).
      const std::int64_t n = std::max<std::int32_t>(1, source.width);
      const std::int64_t first = source.width > 0 ? (source.array->offset() + i) * n : i;
      for (std::int64_t k = 0; k < n; ++k) {
        const double v =
            source.f32 ? static_cast<double>(source.f32[first + k]) : source.f64[first + k];
        if (!std::isfinite(v)) {
          fail("{}: row {}: column '{}'{}: {} is not a finite number", path_.string(), number,
               source.name, source.width > 0 ? fmt::format("[{}]", k) : "", v);
        }
        *out++ = v;
      }
    }
    row.values = values_;
  }

  static constexpr std::int64_t kReadRows = 8192;
  // Values per row (all columns and list entries): far above any model's outputs (the widest
  // embeddings are a few thousand values), and small enough to name each one.
  static constexpr std::int64_t kMaxValuesPerRow = std::int64_t{1} << 20;

  // One value field: a float column (width 0) or a fixed_size_list of `width`.
  struct Source {
    std::string name;
    std::int32_t width = 0;
    bool f32_type = true;
    std::shared_ptr<arrow::Array> array{};  // of the current batch
    const arrow::Array* values = nullptr;   // the floats: array, or the list's values
    const float* f32 = nullptr;             // the raw values, from the values array's start
    const double* f64 = nullptr;
    bool values_have_nulls = false;
  };

  void add_source(const arrow::Field& field) {
    const arrow::DataType& type = *field.type();
    auto is_float = [](const arrow::DataType& t) {
      return t.id() == arrow::Type::FLOAT || t.id() == arrow::Type::DOUBLE;
    };
    if (is_float(type)) {
      sources_.push_back(Source{.name = field.name(), .f32_type = type.id() == arrow::Type::FLOAT});
      return;
    }
    if (type.id() == arrow::Type::FIXED_SIZE_LIST) {
      const auto& list = static_cast<const arrow::FixedSizeListType&>(type);
      if (is_float(*list.value_type()) && list.list_size() > 0) {
        sources_.push_back(Source{.name = field.name(),
                                  .width = list.list_size(),
                                  .f32_type = list.value_type()->id() == arrow::Type::FLOAT});
        return;
      }
    }
    fail("{}: column '{}' is of type {}; expected float32, float64 or a fixed_size_list of them",
         path_.string(), field.name(), type.ToString());
  }

  void bind_values(const arrow::RecordBatch& batch) override {
    for (Source& source : sources_) {
      source.array = batch.GetColumnByName(source.name);
      source.values = source.array.get();
      if (source.width > 0)
        source.values = static_cast<const arrow::FixedSizeListArray&>(*source.array).values().get();
      source.values_have_nulls = source.width > 0 && source.values->null_count() > 0;
      const auto& data = *source.values->data();
      // Raw values from the values array's own start (its offset applied here).
      if (source.f32_type) {
        source.f32 = data.GetValues<float>(1, 0) + data.offset;
        source.f64 = nullptr;
      } else {
        source.f64 = data.GetValues<double>(1, 0) + data.offset;
        source.f32 = nullptr;
      }
    }
  }

  static bool has_null_value(const Source& source, std::int64_t i) {
    const std::int64_t first = (source.array->offset() + i) * source.width;
    for (std::int64_t k = 0; k < source.width; ++k)
      if (source.values->IsNull(first + k)) return true;
    return false;
  }

  std::vector<Source> sources_;
  std::vector<double> values_;
};

}  // namespace

std::string parquet_library() { return "Arrow " MCINFER_ARROW_VERSION_STRING; }

bool parquet_available() { return true; }

std::unique_ptr<PredictionReader> make_parquet_prediction_reader(
    const std::filesystem::path& path) {
  return parquet_io::guard_metadata(path, [&]() -> std::unique_ptr<PredictionReader> {
    auto reader = parquet_io::open_reader(path);
    if (parquet_io::is_sparse_table(*reader, path))
      return make_sparse_parquet_reader(path, std::move(reader));
    return std::make_unique<ParquetPredictionReader>(path, std::move(reader));
  });
}

std::unique_ptr<PredictionWriter> make_parquet_prediction_writer(const std::filesystem::path& path,
                                                                 const PredictionSchema& schema,
                                                                 const TableFacts& facts) {
  if (schema.sparse) return make_sparse_parquet_writer(path, facts.integer_ids);
  return std::make_unique<ParquetWriter>(path, schema, facts);
}

}  // namespace mcinfer::data
