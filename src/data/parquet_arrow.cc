#include "data/parquet_arrow.h"

#include <arrow/io/file.h>
#include <fmt/format.h>

namespace mcinfer::data::parquet_io {
namespace {

bool is_string_type(arrow::Type::type id) {
  return id == arrow::Type::STRING || id == arrow::Type::LARGE_STRING ||
         id == arrow::Type::STRING_VIEW;
}

bool is_integer_type(arrow::Type::type id) {
  switch (id) {
    case arrow::Type::INT8:
    case arrow::Type::INT16:
    case arrow::Type::INT32:
    case arrow::Type::INT64:
    case arrow::Type::UINT8:
    case arrow::Type::UINT16:
    case arrow::Type::UINT32:
    case arrow::Type::UINT64:
      return true;
    default:
      return false;
  }
}

template <typename ArrayType>
auto value_at(const arrow::Array& array, std::int64_t i) {
  return static_cast<const ArrayType&>(array).Value(i);
}

std::string_view string_at(const arrow::Array& array, arrow::Type::type id, std::int64_t i) {
  switch (id) {
    case arrow::Type::STRING:
      return static_cast<const arrow::StringArray&>(array).GetView(i);
    case arrow::Type::LARGE_STRING:
      return static_cast<const arrow::LargeStringArray&>(array).GetView(i);
    case arrow::Type::STRING_VIEW:
      return static_cast<const arrow::StringViewArray&>(array).GetView(i);
    default:
      return {};
  }
}

template <typename T>
std::string_view format_integer(T value, std::string& scratch) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  scratch.assign(digits, end);
  return scratch;
}

// The footer's row counts, which a reader that needs no column trusts alone (rows are then
// counted, not read): every row group's count is not negative and they add up to the file's.
// A fuzzed footer claimed -27 rows in a group, which counted as 2^64 - 27 rows.
void check_row_counts(const parquet::FileMetaData& metadata, const std::filesystem::path& path) {
  std::int64_t total = 0;
  for (int g = 0; g < metadata.num_row_groups(); ++g) {
    const std::int64_t rows = metadata.RowGroup(g)->num_rows();
    if (rows < 0 || __builtin_add_overflow(total, rows, &total))
      fail("{}: malformed Parquet metadata: row group {} claims {} rows", path.string(), g, rows);
  }
  if (total != metadata.num_rows()) {
    fail("{}: malformed Parquet metadata: the row groups hold {} rows, the file claims {}",
         path.string(), total, metadata.num_rows());
  }
}

}  // namespace

std::unique_ptr<parquet::arrow::FileReader> open_reader(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail("{}: no such file", path.string());
  if (!std::filesystem::is_regular_file(path, ec)) fail("{}: not a regular file", path.string());
  auto file = take(arrow::io::ReadableFile::Open(path.string()), path, "cannot open");
  parquet::arrow::FileReaderBuilder builder;
  check(builder.Open(std::move(file)), path, "not a Parquet file");
  auto reader = take(builder.Build(), path, "not a Parquet file");
  check_row_counts(*reader->parquet_reader()->metadata(), path);
  return reader;
}

bool BatchCursor::advance(const std::filesystem::path& path, std::uint64_t rows_before) {
  std::shared_ptr<arrow::RecordBatch> batch;
  check(batches_->ReadNext(&batch), path,
        fmt::format("cannot read the rows after row {}", rows_before));
  if (!batch) return false;
  check(batch->ValidateFull(), path,
        fmt::format("malformed data in the rows after row {}", rows_before));
  batch_ = std::move(batch);
  rows_ = batch_->num_rows();
  at_ = 0;
  return true;
}

int leaf_column(const parquet::arrow::FileReader& reader, const std::filesystem::path& path,
                const std::string& name) {
  const auto& fields = reader.manifest().schema_fields;
  int found = -1;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].field->name() != name) continue;
    if (found >= 0) fail("{}: column '{}' appears twice in the schema", path.string(), name);
    if (!fields[i].is_leaf()) {
      fail("{}: column '{}' is a nested column ({}), not a column of values", path.string(), name,
           fields[i].field->type()->ToString());
    }
    found = fields[i].column_index;
  }
  return found;
}

bool TextColumn::readable(const arrow::DataType& type, bool ids) {
  if (is_string_type(type.id())) return true;
  if (ids && is_integer_type(type.id())) return true;
  if (type.id() == arrow::Type::DICTIONARY) {
    return is_string_type(static_cast<const arrow::DictionaryType&>(type).value_type()->id());
  }
  return false;
}

std::string_view TextColumn::kinds(bool ids) {
  return ids ? "string, large_string, string_view, a dictionary of them, or integers"
             : "string, large_string, string_view or a dictionary of them";
}

void TextColumn::bind(const std::shared_ptr<arrow::Array>& array) {
  array_ = array;
  values_ = array_.get();
  const arrow::Type::type id = array_->type_id();
  auto string_kind = [](arrow::Type::type t) {
    return t == arrow::Type::STRING         ? Kind::kString
           : t == arrow::Type::LARGE_STRING ? Kind::kLargeString
                                            : Kind::kStringView;
  };
  if (is_string_type(id)) {
    kind_ = string_kind(id);
  } else if (id == arrow::Type::DICTIONARY) {
    kind_ = Kind::kDictionary;
    values_ = static_cast<const arrow::DictionaryArray&>(*array_).dictionary().get();
  } else if (id == arrow::Type::UINT8 || id == arrow::Type::UINT16 || id == arrow::Type::UINT32 ||
             id == arrow::Type::UINT64) {
    kind_ = Kind::kUInt;
  } else {
    kind_ = Kind::kInt;
  }
}

std::string_view TextColumn::text(std::int64_t i, std::string& scratch) const {
  const arrow::Type::type id = array_->type_id();
  switch (kind_) {
    case Kind::kString:
    case Kind::kLargeString:
    case Kind::kStringView:
      return string_at(*array_, id, i);
    case Kind::kDictionary: {
      const std::int64_t at = static_cast<const arrow::DictionaryArray&>(*array_).GetValueIndex(i);
      return string_at(*values_, values_->type_id(), at);
    }
    case Kind::kInt:
      switch (id) {
        case arrow::Type::INT8:
          return format_integer<int>(value_at<arrow::Int8Array>(*array_, i), scratch);
        case arrow::Type::INT16:
          return format_integer<int>(value_at<arrow::Int16Array>(*array_, i), scratch);
        case arrow::Type::INT32:
          return format_integer(value_at<arrow::Int32Array>(*array_, i), scratch);
        default:
          return format_integer(value_at<arrow::Int64Array>(*array_, i), scratch);
      }
    case Kind::kUInt:
      switch (id) {
        case arrow::Type::UINT8:
          return format_integer<unsigned>(value_at<arrow::UInt8Array>(*array_, i), scratch);
        case arrow::Type::UINT16:
          return format_integer<unsigned>(value_at<arrow::UInt16Array>(*array_, i), scratch);
        case arrow::Type::UINT32:
          return format_integer(value_at<arrow::UInt32Array>(*array_, i), scratch);
        default:
          return format_integer(value_at<arrow::UInt64Array>(*array_, i), scratch);
      }
  }
  return {};
}

}  // namespace mcinfer::data::parquet_io
