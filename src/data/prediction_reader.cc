#include "data/prediction_reader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

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

struct RowProblem {
  std::string reason;
};

bool is_embedding_columns(const std::vector<std::string>& columns) {
  if (columns.empty()) return false;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] != fmt::format("e{}", i)) return false;
  }
  return true;
}

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
    schema_.embedding = is_embedding_columns(schema_.columns);
    values_.resize(schema_.columns.size());
    has_schema_ = true;
  }

  bool has_schema() const override { return has_schema_; }
  const PredictionSchema& schema() const override { return schema_; }
  Format format() const override { return Format::kCsv; }
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
  Format format() const override { return Format::kJsonl; }
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
    row.values = values_;
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

  // The first row fixes the columns: its keys in order, or the length of its embedding.
  void learn_schema() {
    check_line();
    JsonCursor c(line_.text);
    auto top = c.peek_kind();
    if (top != JsonCursor::Kind::kObject) {
      throw RowProblem{fmt::format("expected a JSON object, got {}", json_kind_name(top))};
    }
    c.begin_object();
    std::string_view key;
    bool seen_id = false, other = false;
    while (c.next_key(key)) {
      if (key == kIdColumn) {
        if (seen_id) throw RowProblem{"field 'id' appears twice"};
        seen_id = true;
        read_id(c, nullptr);
      } else if (key == kEmbedding) {
        if (schema_.embedding) throw RowProblem{"field 'embedding' appears twice"};
        if (other) throw RowProblem{"field 'embedding' comes with other value fields"};
        schema_.embedding = true;
        auto kind = c.peek_kind();
        if (kind != JsonCursor::Kind::kArray) {
          throw RowProblem{fmt::format("field 'embedding': expected an array of numbers, got {}",
                                       json_kind_name(kind))};
        }
        std::size_t d = 0;
        c.begin_array();
        while (c.next_item()) {
          read_number(c, fmt::format("e{}", d));
          ++d;
        }
        if (d == 0) throw RowProblem{"field 'embedding' is empty"};
        for (std::size_t i = 0; i < d; ++i) schema_.columns.push_back(fmt::format("e{}", i));
      } else {
        if (schema_.embedding) throw RowProblem{"field 'embedding' comes with other value fields"};
        other = true;
        if (!index_.emplace(std::string(key), schema_.columns.size()).second) {
          throw RowProblem{fmt::format("field '{}' appears twice", key)};
        }
        schema_.columns.emplace_back(key);
        read_number(c, key);
      }
    }
    if (!c.at_end()) c.fail("unexpected data after the object");
    if (!seen_id) throw RowProblem{"missing field 'id'"};
    if (schema_.columns.empty()) throw RowProblem{"no value fields besides 'id'"};
    values_.resize(schema_.columns.size());
    stamp_.assign(schema_.columns.size(), 0);
    first_line_ = line_.number;
  }

  std::size_t column_of(std::string_view key, std::size_t position) const {
    const auto& cols = schema_.columns;
    if (position < cols.size() && cols[position] == key) return position;  // the usual order
    auto it = index_.find(std::string(key));
    if (it == index_.end()) {
      throw RowProblem{fmt::format("unexpected field '{}' (the first row, line {}, has: id, {})",
                                   key, first_line_, fmt::join(cols, ", "))};
    }
    return it->second;
  }

  void parse_row(PredictionRow& row) {
    check_line();
    JsonCursor c(line_.text);
    auto top = c.peek_kind();
    if (top != JsonCursor::Kind::kObject) {
      throw RowProblem{fmt::format("expected a JSON object, got {}", json_kind_name(top))};
    }
    ++row_stamp_;
    bool seen_id = false;
    std::size_t seen = 0, position = 0;
    c.begin_object();
    std::string_view key;
    while (c.next_key(key)) {
      if (key == kIdColumn) {
        if (seen_id) throw RowProblem{"field 'id' appears twice"};
        seen_id = true;
        read_id(c, &row);
        continue;
      }
      if (schema_.embedding) {
        if (key != kEmbedding) {
          throw RowProblem{
              fmt::format("unexpected field '{}' (the first row, line {}, has: id, embedding)", key,
                          first_line_)};
        }
        if (seen > 0) throw RowProblem{"field 'embedding' appears twice"};
        auto kind = c.peek_kind();
        if (kind != JsonCursor::Kind::kArray) {
          throw RowProblem{fmt::format("field 'embedding': expected an array of numbers, got {}",
                                       json_kind_name(kind))};
        }
        c.begin_array();
        std::size_t d = 0;
        while (c.next_item()) {
          if (d == values_.size()) {
            throw RowProblem{
                fmt::format("field 'embedding' has more than {} items", values_.size())};
          }
          values_[d] = read_number(c, schema_.columns[d]);
          ++d;
        }
        if (d != values_.size()) {
          throw RowProblem{
              fmt::format("field 'embedding' has {} items, expected {}", d, values_.size())};
        }
        seen = values_.size();
        continue;
      }
      std::size_t col = column_of(key, position++);
      if (stamp_[col] == row_stamp_) throw RowProblem{fmt::format("field '{}' appears twice", key)};
      stamp_[col] = row_stamp_;
      values_[col] = read_number(c, schema_.columns[col]);
      ++seen;
    }
    if (!c.at_end()) c.fail("unexpected data after the object");
    if (!seen_id) throw RowProblem{"missing field 'id'"};
    if (seen != values_.size()) {
      if (schema_.embedding) throw RowProblem{"missing field 'embedding'"};
      for (std::size_t i = 0; i < values_.size(); ++i) {
        if (stamp_[i] != row_stamp_) {
          throw RowProblem{fmt::format("missing field '{}'", schema_.columns[i])};
        }
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
  std::unordered_map<std::string, std::size_t> index_;
  std::vector<double> values_;
  std::vector<std::uint64_t> stamp_;
  std::uint64_t row_stamp_ = 0;
  std::string id_scratch_;
  std::optional<std::string> warning_;
};

std::unique_ptr<PredictionReader> make(StreamBuffer in, std::filesystem::path name, Format format,
                                       const ReaderOptions& options) {
  if (format == Format::kCsv) {
    return std::make_unique<CsvPredictionReader>(std::move(in), std::move(name), options);
  }
  return std::make_unique<JsonlPredictionReader>(std::move(in), std::move(name), options);
}

}  // namespace

std::unique_ptr<PredictionReader> PredictionReader::open(const std::filesystem::path& path,
                                                         std::optional<Format> format,
                                                         const ReaderOptions& options) {
  Format f = format ? *format : resolve_format(path, std::nullopt);
  return make(StreamBuffer::open_file(path, options.chunk_bytes), path, f, options);
}

std::unique_ptr<PredictionReader> PredictionReader::open_bytes(std::string_view bytes,
                                                               const std::filesystem::path& name,
                                                               Format format,
                                                               const ReaderOptions& options) {
  return make(StreamBuffer::from_bytes(bytes, options.chunk_bytes), name, format, options);
}

}  // namespace mcinfer::data
