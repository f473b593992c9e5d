// RowReader for JSONL inputs.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <limits>
#include <optional>

#include "core/error.h"
#include "data/csv_parser.h"
#include "data/json_cursor.h"
#include "data/line_splitter.h"
#include "data/row_readers.h"

namespace mcinfer::data {
namespace {

// A row that parses as JSON but does not have what a row needs.
struct RowProblem {
  std::string reason;
};

constexpr std::string_view kInputIds = "input_ids";
constexpr std::string_view kAttentionMask = "attention_mask";
constexpr std::string_view kTokenTypeIds = "token_type_ids";

// The keys of a line's top-level object, for a message; empty when it does not parse.
std::vector<std::string> list_keys(std::string_view text) {
  std::vector<std::string> keys;
  try {
    JsonCursor c(text);
    c.begin_object();
    std::string_view key;
    while (c.next_key(key)) {
      keys.emplace_back(key);
      c.skip_value();
    }
  } catch (const JsonSyntaxError&) {
  }
  return keys;
}

class JsonlRowReader final : public RowReader {
 public:
  JsonlRowReader(StreamBuffer in, std::filesystem::path name, const ColumnSpec& columns,
                 const ReaderOptions& options)
      : in_(std::move(in)),
        lines_(in_, options.max_row_bytes),
        path_(std::move(name)),
        columns_(columns),
        max_row_(options.max_row_bytes) {
    lines_.skip_bom();
  }

  Result next(Row& row, BadRow& bad) override {
    if (!lines_.next(line_)) return Result::kEnd;
    std::uint64_t index = index_++;
    bad.index = index;
    bad.line = line_.number;
    if (line_.too_large) {
      bad.reason = fmt::format("row larger than {}", format_byte_size(max_row_));
      return Result::kBadRow;
    }
    try {
      parse(line_.text, row);
    } catch (const JsonSyntaxError& e) {
      bad.reason = fmt::format("invalid JSON at column {}: {}", e.offset + 1, e.message);
      return Result::kBadRow;
    } catch (const RowProblem& p) {
      bad.reason = p.reason;
      return Result::kBadRow;
    }
    row.index = index;
    row.line = line_.number;
    if (!has_id_) {
      set_row_number_id(index, row.id);
    }
    return Result::kRow;
  }

  const std::filesystem::path& path() const override { return path_; }
  std::uint64_t bytes_read() const override { return in_.consumed(); }
  std::uint64_t file_size() const override { return in_.size(); }

 private:
  void claim(bool& seen, std::string_view key) {
    if (seen) throw RowProblem{fmt::format("field '{}' appears twice", key)};
    seen = true;
  }

  void read_string(JsonCursor& c, std::string_view key, std::string& out) {
    auto kind = c.peek_kind();
    if (kind != JsonCursor::Kind::kString) {
      throw RowProblem{
          fmt::format("field '{}': expected a string, got {}", key, json_kind_name(kind))};
    }
    out.assign(c.string(scratch_));
  }

  void read_ids(JsonCursor& c, std::string_view key, std::vector<std::int32_t>& out) {
    auto kind = c.peek_kind();
    if (kind != JsonCursor::Kind::kArray) {
      throw RowProblem{fmt::format("field '{}': expected an array of integers, got {}", key,
                                   json_kind_name(kind))};
    }
    out.clear();
    c.begin_array();
    while (c.next_item()) {
      auto item = c.peek_kind();
      if (item != JsonCursor::Kind::kNumber) {
        throw RowProblem{fmt::format("field '{}': item {}: expected an integer, got {}", key,
                                     out.size(), json_kind_name(item))};
      }
      std::string_view raw = c.number();
      std::int64_t v = 0;
      auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), v);
      if (end != raw.data() + raw.size()) {
        throw RowProblem{
            fmt::format("field '{}': item {}: {} is not an integer", key, out.size(), raw)};
      }
      if (ec != std::errc() || v < std::numeric_limits<std::int32_t>::min() ||
          v > std::numeric_limits<std::int32_t>::max()) {
        throw RowProblem{fmt::format("field '{}': item {}: {} is out of the 32-bit range", key,
                                     out.size(), raw)};
      }
      out.push_back(static_cast<std::int32_t>(v));
    }
  }

  void parse(std::string_view text, Row& row) {
    JsonCursor c(text);
    auto top = c.peek_kind();
    if (top != JsonCursor::Kind::kObject) {
      throw RowProblem{fmt::format("expected a JSON object, got {}", json_kind_name(top))};
    }
    bool seen_id = false, seen_text = false, seen_pair = false, seen_ids = false, seen_mask = false,
         seen_types = false;
    const bool want_text = columns_.read_text;
    const std::string* pair_col = columns_.text_pair_col ? &*columns_.text_pair_col : nullptr;
    row.text.clear();
    row.input_ids.clear();
    row.attention_mask.clear();
    row.token_type_ids.clear();
    c.begin_object();
    std::string_view key;
    while (c.next_key(key)) {
      if (key == columns_.id_col) {
        claim(seen_id, key);
        auto kind = c.peek_kind();
        if (kind == JsonCursor::Kind::kString) {
          row.id.text.assign(c.string(scratch_));
          row.id.is_string = true;
        } else if (kind == JsonCursor::Kind::kNumber) {
          row.id.text.assign(c.number());
          row.id.is_string = false;
        } else {
          throw RowProblem{fmt::format("field '{}': expected a string or a number, got {}", key,
                                       json_kind_name(kind))};
        }
      } else if (want_text && key == columns_.text_col) {
        claim(seen_text, key);
        read_string(c, key, row.text);
      } else if (want_text && pair_col != nullptr && key == *pair_col) {
        claim(seen_pair, key);
        if (!row.text_pair) row.text_pair.emplace();
        read_string(c, key, *row.text_pair);
      } else if (want_text && key == kInputIds) {
        claim(seen_ids, key);
        read_ids(c, key, row.input_ids);
      } else if (want_text && key == kAttentionMask) {
        claim(seen_mask, key);
        read_ids(c, key, row.attention_mask);
      } else if (want_text && key == kTokenTypeIds) {
        claim(seen_types, key);
        read_ids(c, key, row.token_type_ids);
      } else {
        c.skip_value();
      }
    }
    if (!c.at_end()) c.fail("unexpected data after the object");

    row.pretokenized = seen_ids;
    if (want_text) {
      if (seen_ids) {
        if (row.input_ids.empty()) throw RowProblem{"field 'input_ids' is empty"};
        for (auto [seen, name, values] :
             {std::tuple{seen_mask, kAttentionMask, &row.attention_mask},
              std::tuple{seen_types, kTokenTypeIds, &row.token_type_ids}}) {
          if (seen && values->size() != row.input_ids.size()) {
            throw RowProblem{fmt::format("field '{}' has {} items, 'input_ids' has {}", name,
                                         values->size(), row.input_ids.size())};
          }
        }
      } else {
        // A mask without ids means nothing: only pre-tokenised rows use it.
        row.attention_mask.clear();
        row.token_type_ids.clear();
        if (!seen_text) {
          throw RowProblem{fmt::format("missing field '{}' (and no 'input_ids'); fields found: {}",
                                       columns_.text_col, fmt::join(list_keys(text), ", "))};
        }
        if (pair_col != nullptr && !seen_pair) {
          throw RowProblem{fmt::format("missing field '{}'; fields found: {}", *pair_col,
                                       fmt::join(list_keys(text), ", "))};
        }
      }
    }
    if (!seen_pair) row.text_pair.reset();

    if (!id_decided_) {  // the first well-formed row decides whether rows carry ids
      id_decided_ = true;
      has_id_ = seen_id;
      first_line_ = line_.number;
    } else if (seen_id != has_id_) {
      throw RowProblem{
          seen_id ? fmt::format("field '{}' is present, but the first row (line {}) has none; "
                                "ids must be in every row or in none",
                                columns_.id_col, first_line_)
                  : fmt::format("missing field '{}' (the first row, line {}, has one)",
                                columns_.id_col, first_line_)};
    }
  }

  StreamBuffer in_;
  LineSplitter lines_;
  std::filesystem::path path_;
  ColumnSpec columns_;
  std::size_t max_row_;
  Line line_;
  std::string scratch_;
  std::uint64_t index_ = 0;
  bool id_decided_ = false;
  bool has_id_ = false;
  std::uint64_t first_line_ = 0;
};

}  // namespace

std::unique_ptr<RowReader> make_jsonl_row_reader(StreamBuffer in, std::filesystem::path name,
                                                 const ColumnSpec& columns,
                                                 const ReaderOptions& options) {
  return std::make_unique<JsonlRowReader>(std::move(in), std::move(name), columns, options);
}

}  // namespace mcinfer::data
