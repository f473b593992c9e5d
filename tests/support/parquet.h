#pragma once
// Writing Parquet inputs for the tests through Arrow itself (builds with Arrow only): columns of
// strings, large strings, dictionaries, integers and floats, in row groups of a chosen size.

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mcinfer::testing {

inline void ok(const arrow::Status& status) {
  if (!status.ok()) throw std::runtime_error(status.ToString());
}

template <typename T>
T ok(arrow::Result<T> result) {
  ok(result.status());
  return std::move(result).ValueUnsafe();
}

using Texts = std::vector<std::optional<std::string>>;  // nullopt: a null

enum class TextKind { kString, kLargeString, kDictionary };

inline std::shared_ptr<arrow::Array> text_array(const Texts& texts,
                                                TextKind kind = TextKind::kString) {
  auto fill = [&](auto& builder) {
    for (const auto& t : texts) ok(t ? builder.Append(*t) : builder.AppendNull());
    return ok(builder.Finish());
  };
  switch (kind) {
    case TextKind::kString: {
      arrow::StringBuilder b;
      return fill(b);
    }
    case TextKind::kLargeString: {
      arrow::LargeStringBuilder b;
      return fill(b);
    }
    case TextKind::kDictionary: {
      arrow::StringDictionaryBuilder b;
      return fill(b);
    }
  }
  return nullptr;
}

inline std::shared_ptr<arrow::Array> int64_array(const std::vector<std::int64_t>& values) {
  arrow::Int64Builder b;
  ok(b.AppendValues(values));
  return ok(b.Finish());
}

inline std::shared_ptr<arrow::Array> float_array(const std::vector<float>& values) {
  arrow::FloatBuilder b;
  ok(b.AppendValues(values));
  return ok(b.Finish());
}

struct NamedColumn {
  std::string name;
  std::shared_ptr<arrow::Array> array;
};

// Writes the columns as a Parquet file with row groups of `group_rows` rows.
inline void write_parquet(const std::filesystem::path& path,
                          const std::vector<NamedColumn>& columns, std::int64_t group_rows = 1024) {
  arrow::FieldVector fields;
  arrow::ArrayVector arrays;
  for (const auto& c : columns) {
    fields.push_back(arrow::field(c.name, c.array->type()));
    arrays.push_back(c.array);
  }
  auto table = arrow::Table::Make(arrow::schema(fields), arrays);
  auto out = ok(arrow::io::FileOutputStream::Open(path.string()));
  auto arrow_properties = parquet::ArrowWriterProperties::Builder().store_schema()->build();
  ok(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), out, group_rows,
                                parquet::default_writer_properties(), arrow_properties));
  ok(out->Close());
}

// The whole file as an Arrow table (its stored schema applied).
inline std::shared_ptr<arrow::Table> read_parquet(const std::filesystem::path& path) {
  auto in = ok(arrow::io::ReadableFile::Open(path.string()));
  auto reader = ok(parquet::arrow::OpenFile(in, arrow::default_memory_pool()));
  return ok(reader->ReadTable());
}

}  // namespace mcinfer::testing
