#include "data/prediction_reader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_map>

#include "core/error.h"
#include "data/csv_parser.h"
#include "data/json_cursor.h"
#include "data/line_splitter.h"
#include "data/stream_buffer.h"

namespace mcinfer::data {
namespace {

constexpr std::string_view kIdColumn = "id";
constexpr std::string_view kEmbedding = "embedding";
constexpr std::string_view kIndices = "indices";
constexpr std::string_view kSparseValues = "values";

struct RowProblem {
  std::string reason;
};

// A finite double from text as pandas would accept it (surrounding blanks and a leading '+'
// allowed). Throws RowProblem naming the column.
double parse_value(std::string_view text, std::string_view column) {
  std::string_view t = text;
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
  if (t.empty()) throw RowProblem{fmt::format("column '{}': empty value", column)};
  if (t.size() > 1 && t.front() == '+' && t[1] != '-' && t[1] != '+') t.remove_prefix(1);
  double v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (end != t.data() + t.size() || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    std::string shown(text.substr(0, 40));
    throw RowProblem{fmt::format("column '{}': '{}' is not a number", column, shown)};
  }
  if (ec == std::errc::result_out_of_range) {
    throw RowProblem{
        fmt::format("column '{}': {} is out of the range of a double", column, text.substr(0, 40))};
  }
  if (std::isnan(v)) throw RowProblem{fmt::format("column '{}': NaN is not a prediction", column)};
  if (std::isinf(v)) {
    throw RowProblem{fmt::format("column '{}': infinity is not a prediction", column)};
  }
  return v;
}

std::string torn_warning(const std::filesystem::path& path, std::uint64_t line,
                         std::string_view reason) {
  return fmt::format(
      "{}:{}: last line is torn (the file does not end with a line break; {}): dropped",
      path.string(), line, reason);
}

std::string unterminated_warning(const std::filesystem::path& path, std::uint64_t line) {
  return fmt::format(
      "{}:{}: last line does not end with a line break; it parses and is kept, but check the "
      "file was written completely",
      path.string(), line);
}

class CsvPredictionReader final : public PredictionReader {
 public:
  CsvPredictionReader(StreamBuffer in, std::filesystem::path name, const ReaderOptions& options)
      : in_(std::move(in)),
        parser_(in_, options.max_row_bytes),
        path_(std::move(name)),
        max_row_(options.max_row_bytes) {
    parser_.skip_bom();
    if (!parser_.next(record_)) return;  // empty file: no schema
    if (record_.problem != CsvRecord::Problem::kNone) {
      fail("{}:{}: header: {}", path_.string(), record_.line,
           describe_csv_problem(record_, {}, max_row_));
    }
    header_.assign(record_.fields.begin(), record_.fields.end());
    std::optional<std::size_t> id;
    std::unordered_map<std::string_view, std::size_t> seen;
    for (std::size_t i = 0; i < header_.size(); ++i) {
      auto [it, fresh] = seen.emplace(header_[i], i);
      if (!fresh) {
        fail("{}:{}: column '{}' appears twice in the header (fields {} and {})", path_.string(),
             record_.line, header_[i], it->second + 1, i + 1);
      }
      if (header_[i] == kIdColumn) {
        id = i;
      } else {
        schema_.columns.push_back(header_[i]);
      }
    }
    if (!id) {
      fail("{}: no column 'id' in the header (columns found: {})", path_.string(),
           fmt::join(header_, ", "));
    }
    if (schema_.columns.empty()) fail("{}: no value columns besides 'id'", path_.string());
    id_ = *id;
    schema_.groups = output_groups_of(schema_.columns);
    schema_.embedding = schema_.groups.empty() && is_embedding_columns(schema_.columns);
    values_.resize(schema_.columns.size());
    has_schema_ = true;
  }

  bool has_schema() const override { return has_schema_; }
  const PredictionSchema& schema() const override { return schema_; }
  OutputFormat format() const override { return OutputFormat::kCsv; }
  const std::filesystem::path& path() const override { return path_; }
  const std::optional<std::string>& warning() const override { return warning_; }

  bool next(PredictionRow& row) override {
    if (!has_schema_ || !parser_.next(record_)) return false;
    try {
      check_and_convert();
    } catch (const RowProblem& p) {
      if (!record_.terminated && record_.lines == 0) {
        warning_ = torn_warning(path_, record_.line, p.reason);
        return false;
      }
      fail("{}:{}: {}", path_.string(), record_.line, p.reason);
    }
    if (!record_.terminated) warning_ = unterminated_warning(path_, record_.line);
    row.line = record_.line;
    row.id = record_.fields[id_];
    row.id_is_string = true;
    row.values = values_;
    return true;
  }

 private:
  void check_and_convert() {
    if (record_.problem != CsvRecord::Problem::kNone) {
      throw RowProblem{describe_csv_problem(record_, header_, max_row_)};
    }
    if (record_.fields.size() != header_.size()) {
      throw RowProblem{
          fmt::format("expected {} fields, got {}", header_.size(), record_.fields.size())};
    }
    std::size_t out = 0;
    for (std::size_t i = 0; i < header_.size(); ++i) {
      if (i == id_) continue;
      values_[out++] = parse_value(record_.fields[i], header_[i]);
    }
  }

  StreamBuffer in_;
  CsvParser parser_;
  std::filesystem::path path_;
  std::size_t max_row_;
  CsvRecord record_;
  std::vector<std::string> header_;
  std::size_t id_ = 0;
  PredictionSchema schema_;
  bool has_schema_ = false;
  std::vector<double> values_;
  std::optional<std::string> warning_;
};

class JsonlPredictionReader final : public PredictionReader {
 public:
  JsonlPredictionReader(StreamBuffer in, std::filesystem::path name, const ReaderOptions& options)
      : in_(std::move(in)),
        lines_(in_, options.max_row_bytes),
        path_(std::move(name)),
        max_row_(options.max_row_bytes) {
    lines_.skip_bom();
    if (!lines_.next(line_)) return;  // empty file: no schema
    try {
      learn_schema();
    } catch (const JsonSyntaxError& e) {
      first_problem(fmt::format("invalid JSON at column {}: {}", e.offset + 1, e.message));
      return;
    } catch (const RowProblem& p) {
      first_problem(p.reason);
      return;
    }
    has_schema_ = true;
    pending_ = true;  // the first row is parsed again by next()
  }

  bool has_schema() const override { return has_schema_; }
  const PredictionSchema& schema() const override { return schema_; }
  OutputFormat format() const override { return OutputFormat::kJsonl; }
  const std::filesystem::path& path() const override { return path_; }
  const std::optional<std::string>& warning() const override { return warning_; }

  bool next(PredictionRow& row) override {
    if (!has_schema_) return false;
    if (pending_) {
      pending_ = false;
    } else if (!lines_.next(line_)) {
      return false;
    }
    std::string reason;
    try {
      parse_row(row);
    } catch (const JsonSyntaxError& e) {
      reason = fmt::format("invalid JSON at column {}: {}", e.offset + 1, e.message);
    } catch (const RowProblem& p) {
      reason = p.reason;
    }
    if (!reason.empty()) {
      if (!line_.terminated) {
        warning_ = torn_warning(path_, line_.number, reason);
        return false;
      }
      fail("{}:{}: {}", path_.string(), line_.number, reason);
    }
    if (!line_.terminated) warning_ = unterminated_warning(path_, line_.number);
    row.line = line_.number;
    if (schema_.sparse) {
      row.indices = indices_;
      row.values = sparse_values_;
    } else {
      row.indices = {};
      row.values = values_;
    }
    return true;
  }

 private:
  void first_problem(const std::string& reason) {
    if (!line_.terminated) {
      warning_ = torn_warning(path_, line_.number, reason);
      return;
    }
    fail("{}:{}: {}", path_.string(), line_.number, reason);
  }

  void check_line() const {
    if (line_.too_large) {
      throw RowProblem{fmt::format("row larger than {}", format_byte_size(max_row_))};
    }
  }

  void read_id(JsonCursor& c, PredictionRow* row) {
    auto kind = c.peek_kind();
    if (kind == JsonCursor::Kind::kString) {
      std::string_view id = c.string(id_scratch_);
      if (row != nullptr) {
        row->id = id;
        row->id_is_string = true;
      }
    } else if (kind == JsonCursor::Kind::kNumber) {
      std::string_view id = c.number();
      if (row != nullptr) {
        row->id = id;
        row->id_is_string = false;
      }
    } else {
      throw RowProblem{
          fmt::format("field 'id': expected a string or a number, got {}", json_kind_name(kind))};
    }
  }

  double read_number(JsonCursor& c, std::string_view column) {
    auto kind = c.peek_kind();
    if (kind == JsonCursor::Kind::kNull) {
      throw RowProblem{fmt::format(
          "column '{}': null is not a prediction (a NaN or infinity written as null?)", column)};
    }
    if (kind != JsonCursor::Kind::kNumber) {
      throw RowProblem{
          fmt::format("column '{}': expected a number, got {}", column, json_kind_name(kind))};
    }
    return parse_value(c.number(), column);
  }

  // A value field of the first row: a number (one column named by its key), or an array or an
  // object of numbers (an output group: "embedding" alone, or what `run --outputs` writes).
  struct Field {
    std::string key;
    std::size_t first = 0, count = 1;
    JsonCursor::Kind kind = JsonCursor::Kind::kNumber;
  };

  // Reads the array or object of field `f` of the first row; appends its columns.
  void learn_group(JsonCursor& c, Field& f) {
    const bool object = f.kind == JsonCursor::Kind::kObject;
    const std::string prefix = f.key == kEmbedding ? "" : f.key + ".";
    std::size_t d = 0;
    std::string_view label;
    if (object) {
      c.begin_object();
      while (c.next_key(label)) {
        std::string column = prefix + std::string(label);
        if (!index_.emplace(column, schema_.columns.size()).second)
          throw RowProblem{fmt::format("field '{}': '{}' appears twice", f.key, label)};
        read_number(c, column);
        schema_.columns.push_back(std::move(column));
        ++d;
      }
    } else {
      c.begin_array();
      while (c.next_item()) {
        std::string column = fmt::format("{}e{}", prefix, d);
        read_number(c, column);
        schema_.columns.push_back(std::move(column));
        ++d;
      }
    }
    if (d == 0) throw RowProblem{fmt::format("field '{}' is empty", f.key)};
    f.count = d;
  }

  // The first row fixes the columns: its keys in order, or the length of its embedding, or its
  // output groups with their labels or lengths.
  void learn_schema() {
    check_line();
    JsonCursor c(line_.text);
    auto top = c.peek_kind();
    if (top != JsonCursor::Kind::kObject) {
      throw RowProblem{fmt::format("expected a JSON object, got {}", json_kind_name(top))};
    }
    c.begin_object();
    std::string_view key;
    bool seen_id = false;
    std::size_t numbers = 0, sparse_fields = 0;
    while (c.next_key(key)) {
      if (key == kIdColumn) {
        if (seen_id) throw RowProblem{"field 'id' appears twice"};
        seen_id = true;
        read_id(c, nullptr);
        continue;
      }
      if ((key == kIndices || key == kSparseValues) && c.peek_kind() == JsonCursor::Kind::kArray) {
        ++sparse_fields;  // parse_sparse_row checks them (the first row is read again)
        c.skip_value();
        continue;
      }
      if (!field_index_.emplace(std::string(key), fields_.size()).second)
        throw RowProblem{fmt::format("field '{}' appears twice", key)};
      Field& f = fields_.emplace_back(Field{std::string(key), schema_.columns.size()});
      f.kind = c.peek_kind();
      if (f.kind == JsonCursor::Kind::kArray || f.kind == JsonCursor::Kind::kObject) {
        learn_group(c, f);
        continue;
      }
      ++numbers;
      schema_.columns.emplace_back(key);
      read_number(c, key);
    }
    if (!c.at_end()) c.fail("unexpected data after the object");
    if (!seen_id) throw RowProblem{"missing field 'id'"};
    if (sparse_fields > 0) {
      if (sparse_fields != 2 || !fields_.empty()) {
        throw RowProblem{
            "a sparse row has exactly the fields id, indices and values (arrays of the nonzeros' "
            "indices and values)"};
      }
      schema_.sparse = true;
      first_line_ = line_.number;
      return;
    }
    if (schema_.columns.empty()) throw RowProblem{"no value fields besides 'id'"};
    describe_groups(numbers);
    values_.resize(schema_.columns.size());
    stamp_.assign(schema_.columns.size(), 0);
    first_line_ = line_.number;
  }

  // Plain numbers, or one "embedding" array, or output groups: one kind per file.
  void describe_groups(std::size_t numbers) {
    if (numbers == fields_.size()) return;
    if (fields_.size() == 1 && fields_[0].key == kEmbedding &&
        fields_[0].kind == JsonCursor::Kind::kArray) {
      schema_.embedding = true;
      return;
    }
    for (const Field& f : fields_) {
      if (numbers > 0 && f.kind != JsonCursor::Kind::kNumber)
        throw RowProblem{fmt::format("field '{}' comes with other value fields", f.key)};
    }
    for (const Field& f : fields_) {
      if (!is_output_group_name(f.key)) {
        throw RowProblem{
            fmt::format("field '{}': an array or object field must be one of {} ({} "
                        "alone is an embedding)",
                        f.key, fmt::join(kOutputGroupNames, ", "), kEmbedding)};
      }
      schema_.groups.push_back({f.key, f.count, f.kind == JsonCursor::Kind::kObject});
    }
  }

  const Field& field_of(std::string_view key, std::size_t position) const {
    if (position < fields_.size() && fields_[position].key == key) return fields_[position];
    auto it = field_index_.find(std::string(key));
    if (it != field_index_.end()) return fields_[it->second];
    std::vector<std::string_view> keys;
    for (const Field& f : fields_) keys.push_back(f.key);
    throw RowProblem{fmt::format("unexpected field '{}' (the first row, line {}, has: id, {})", key,
                                 first_line_, fmt::join(keys, ", "))};
  }

  // Marks column `col` seen in this row; false when it already was.
  bool stamp(std::size_t col) {
    if (stamp_[col] == row_stamp_) return false;
    stamp_[col] = row_stamp_;
    return true;
  }

  // A group's array (its length as in the first row) or object (the first row's labels).
  void parse_group(JsonCursor& c, const Field& f) {
    const auto kind = c.peek_kind();
    if (kind != f.kind) {
      throw RowProblem{fmt::format("field '{}': expected {} as in the first row (line {}), got {}",
                                   f.key, json_kind_name(f.kind), first_line_,
                                   json_kind_name(kind))};
    }
    if (f.kind == JsonCursor::Kind::kArray) {
      c.begin_array();
      std::size_t d = 0;
      while (c.next_item()) {
        if (d == f.count)
          throw RowProblem{fmt::format("field '{}' has more than {} items", f.key, f.count)};
        stamp(f.first + d);  // an array's items are new in each array (the field's are checked)
        values_[f.first + d] = read_number(c, schema_.columns[f.first + d]);
        ++d;
      }
      if (d != f.count)
        throw RowProblem{fmt::format("field '{}' has {} items, expected {}", f.key, d, f.count)};
      return;
    }
    c.begin_object();
    std::string_view label;
    std::size_t d = 0;
    while (c.next_key(label)) {
      const std::size_t col = label_column(f, label, d++);
      if (!stamp(col))
        throw RowProblem{fmt::format("field '{}': '{}' appears twice", f.key, label)};
      values_[col] = read_number(c, schema_.columns[col]);
    }
  }

  std::size_t label_column(const Field& f, std::string_view label, std::size_t position) {
    const std::size_t prefix = f.key.size() + 1;
    if (position < f.count &&
        std::string_view(schema_.columns[f.first + position]).substr(prefix) == label)
      return f.first + position;  // the usual order
    label_scratch_.assign(f.key).append(".").append(label);
    auto it = index_.find(label_scratch_);
    if (it == index_.end() || it->second < f.first || it->second >= f.first + f.count)
      throw RowProblem{
          fmt::format("field '{}': unexpected label '{}' (the first row, line {}, has "
                      "{} labels)",
                      f.key, label, first_line_, f.count)};
    return it->second;
  }

  // The nonzeros' indices: integers in [0, kMaxSparseIndex], strictly ascending.
  void read_indices(JsonCursor& c) {
    if (c.peek_kind() != JsonCursor::Kind::kArray)
      throw RowProblem{
          fmt::format("field 'indices': expected an array, got {}", json_kind_name(c.peek_kind()))};
    indices_.clear();
    c.begin_array();
    while (c.next_item()) {
      const std::size_t k = indices_.size();
      if (c.peek_kind() != JsonCursor::Kind::kNumber)
        throw RowProblem{fmt::format("field 'indices'[{}]: expected an integer, got {}", k,
                                     json_kind_name(c.peek_kind()))};
      const std::string_view text = c.number();
      std::int64_t v = -1;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || end != text.data() + text.size() || v < 0 || v > kMaxSparseIndex)
        throw RowProblem{fmt::format("field 'indices'[{}]: {} is not an integer in [0, {}]", k,
                                     text.substr(0, 40), kMaxSparseIndex)};
      if (k > 0 && v <= indices_.back())
        throw RowProblem{fmt::format("field 'indices'[{}]: {} after {}: indices must ascend", k, v,
                                     indices_.back())};
      indices_.push_back(static_cast<std::int32_t>(v));
    }
  }

  void read_sparse_values(JsonCursor& c) {
    if (c.peek_kind() != JsonCursor::Kind::kArray)
      throw RowProblem{
          fmt::format("field 'values': expected an array, got {}", json_kind_name(c.peek_kind()))};
    sparse_values_.clear();
    c.begin_array();
    while (c.next_item())
      sparse_values_.push_back(read_number(c, fmt::format("values[{}]", sparse_values_.size())));
  }

  // {"id": ..., "indices": [...], "values": [...]}, the keys in any order.
  void parse_sparse_row(JsonCursor& c, PredictionRow& row) {
    bool seen[3] = {false, false, false};
    c.begin_object();
    std::string_view key;
    while (c.next_key(key)) {
      const int which = key == kIdColumn ? 0 : key == kIndices ? 1 : key == kSparseValues ? 2 : -1;
      if (which < 0)
        throw RowProblem{fmt::format(
            "unexpected field '{}' (a sparse row, as the first on line {}: id, indices, values)",
            key, first_line_)};
      if (seen[which]) throw RowProblem{fmt::format("field '{}' appears twice", key)};
      seen[which] = true;
      if (which == 0) {
        read_id(c, &row);
      } else if (which == 1) {
        read_indices(c);
      } else {
        read_sparse_values(c);
      }
    }
    if (!c.at_end()) c.fail("unexpected data after the object");
    constexpr std::string_view kNames[] = {kIdColumn, kIndices, kSparseValues};
    for (int i = 0; i < 3; ++i)
      if (!seen[i]) throw RowProblem{fmt::format("missing field '{}'", kNames[i])};
    if (indices_.size() != sparse_values_.size())
      throw RowProblem{fmt::format("'indices' has {} items and 'values' {}: one value per index",
                                   indices_.size(), sparse_values_.size())};
  }

  void parse_row(PredictionRow& row) {
    check_line();
    JsonCursor c(line_.text);
    auto top = c.peek_kind();
    if (top != JsonCursor::Kind::kObject) {
      throw RowProblem{fmt::format("expected a JSON object, got {}", json_kind_name(top))};
    }
    if (schema_.sparse) {
      parse_sparse_row(c, row);
      return;
    }
    ++row_stamp_;
    bool seen_id = false;
    std::size_t position = 0;
    c.begin_object();
    std::string_view key;
    while (c.next_key(key)) {
      if (key == kIdColumn) {
        if (seen_id) throw RowProblem{"field 'id' appears twice"};
        seen_id = true;
        read_id(c, &row);
        continue;
      }
      const Field& f = field_of(key, position++);
      if (stamp_[f.first] == row_stamp_)
        throw RowProblem{fmt::format("field '{}' appears twice", key)};
      if (f.kind != JsonCursor::Kind::kNumber) {
        parse_group(c, f);
        continue;
      }
      stamp(f.first);
      values_[f.first] = read_number(c, f.key);
    }
    if (!c.at_end()) c.fail("unexpected data after the object");
    if (!seen_id) throw RowProblem{"missing field 'id'"};
    for (const Field& f : fields_) {
      for (std::size_t i = f.first; i < f.first + f.count; ++i) {
        if (stamp_[i] == row_stamp_) continue;
        if (f.kind == JsonCursor::Kind::kObject)
          throw RowProblem{
              fmt::format("field '{}': missing '{}'", f.key,
                          std::string_view(schema_.columns[i]).substr(f.key.size() + 1))};
        throw RowProblem{fmt::format("missing field '{}'", f.key)};
      }
    }
  }

  StreamBuffer in_;
  LineSplitter lines_;
  std::filesystem::path path_;
  std::size_t max_row_;
  Line line_;
  PredictionSchema schema_;
  bool has_schema_ = false;
  bool pending_ = false;
  std::uint64_t first_line_ = 0;
  std::vector<Field> fields_;                                 // of the first row, in its order
  std::unordered_map<std::string, std::size_t> field_index_;  // key -> field
  std::unordered_map<std::string, std::size_t> index_;        // "<group>.<label>" -> column
  std::vector<double> values_;
  std::vector<std::int32_t> indices_;  // sparse rows
  std::vector<double> sparse_values_;
  std::vector<std::uint64_t> stamp_;
  std::uint64_t row_stamp_ = 0;
  std::string id_scratch_, label_scratch_;
  std::optional<std::string> warning_;
};

std::unique_ptr<PredictionReader> make(StreamBuffer in, std::filesystem::path name,
                                       LineFormat format, const ReaderOptions& options) {
  switch (format) {
    case LineFormat::kCsv:
      return std::make_unique<CsvPredictionReader>(std::move(in), std::move(name), options);
    case LineFormat::kJsonl:
      return std::make_unique<JsonlPredictionReader>(std::move(in), std::move(name), options);
  }
  fail("internal: line format {}", static_cast<int>(format));
}

}  // namespace

std::unique_ptr<PredictionReader> PredictionReader::open(const std::filesystem::path& path,
                                                         std::optional<OutputFormat> format,
                                                         const ReaderOptions& options) {
  const OutputFormat f = format ? *format : resolve_output_format(path);
  return format_info(f).open_reader(path, options);
}

std::unique_ptr<PredictionReader> open_line_prediction_reader(const std::filesystem::path& path,
                                                              LineFormat format,
                                                              const ReaderOptions& options) {
  return make(StreamBuffer::open_file(path, options.chunk_bytes), path, format, options);
}

std::unique_ptr<PredictionReader> PredictionReader::open_bytes(std::string_view bytes,
                                                               const std::filesystem::path& name,
                                                               LineFormat format,
                                                               const ReaderOptions& options) {
  return make(StreamBuffer::from_bytes(bytes, options.chunk_bytes), name, format, options);
}

}  // namespace mcinfer::data
