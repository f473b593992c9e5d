#include "merge/merge.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <random>
#include <unordered_map>

#include "data/prediction_reader.h"
#include "data/prediction_writer.h"
#include "data/predictions.h"
#include "merge/id_table.h"
#include "merge/shard_names.h"
#include "merge/sparse_sums.h"

namespace mcinfer::merge {
namespace {

constexpr std::size_t kListed = 10;  // ids listed in reports

enum Flag : std::uint8_t {
  kExpected = 1,  // among the expected ids
  kSeen = 2,      // has at least one row
  kNumber = 4,    // the first row's id was a JSON number
};

// Integers as [-]digits of any length, compared by value; ties (007 vs 7) by bytes.
bool is_integer(std::string_view s) {
  std::size_t i = (!s.empty() && s[0] == '-') ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

bool integer_less(std::string_view a, std::string_view b) {
  bool na = a[0] == '-', nb = b[0] == '-';
  std::string_view da = a.substr(na), db = b.substr(nb);
  while (da.size() > 1 && da[0] == '0') da.remove_prefix(1);
  while (db.size() > 1 && db[0] == '0') db.remove_prefix(1);
  bool za = da == "0", zb = db == "0";
  if (za) na = false;  // -0 == 0
  if (zb) nb = false;
  if (na != nb) return na;
  int c = da.size() != db.size() ? (da.size() < db.size() ? -1 : 1) : da.compare(db);
  if (c == 0) return a < b;
  return na ? c > 0 : c < 0;
}

class Merger {
 public:
  Merger(const Options& options, bool expecting)
      : options_(options), expecting_(expecting), table_(std::random_device{}()) {}

  // An expected id; its kind (JSON number or string) is the one written, whatever the kind in
  // the shards (which depends on which replica wrote the row first).
  void expect(std::string_view id, bool id_is_string) {
    bool inserted = false;
    std::uint32_t slot = table_.insert(id, inserted);
    ++report_.expected_rows;
    if (inserted) {
      new_slot();
      flags_[slot] = kExpected | (id_is_string ? 0 : kNumber);
    }
  }

  // Fixes or checks the columns of the next input; returns false when it has none.
  bool bind(const data::PredictionReader& reader) {
    if (!reader.has_schema()) return false;
    const auto& schema = reader.schema();
    if (!bound_) {
      bound_ = true;
      schema_ = schema;
      schema_source_ = reader.path();
      ncols_ = schema_.columns.size();
      for (std::size_t i = 0; i < ncols_; ++i) column_index_[schema_.columns[i]] = i;
      init_storage();
    } else if (schema.sparse != schema_.sparse) {
      fail(
          "{}: {} rows, but {} has {} rows: sparse rows (indices, values) merge only with sparse "
          "rows",
          reader.path().string(), schema.sparse ? "sparse" : "dense", schema_source_.string(),
          schema_.sparse ? "sparse" : "dense");
    } else {
      check_columns(reader);
    }
    if (reader.format() == data::OutputFormat::kJsonl) {
      any_jsonl_ = true;
      jsonl_embedding_ = jsonl_embedding_ || schema.embedding;
    }
    identity_ = true;
    map_.resize(schema.columns.size());
    for (std::size_t j = 0; j < schema.columns.size(); ++j) {
      map_[j] = column_index_.at(schema.columns[j]);
      identity_ = identity_ && map_[j] == j;
    }
    return true;
  }

  void add(const data::PredictionRow& row, double weight) {
    if (schema_.sparse) {
      auto [slot, first] = slot_of_row(row.id, row.id_is_string);
      sparse_->add(slot, row.indices, row.values, weight, first);
      return;
    }
    const double* v = row.values.data();
    if (!identity_) {
      for (std::size_t j = 0; j < row.values.size(); ++j) scratch_[map_[j]] = row.values[j];
      v = scratch_.data();
    }
    auto [slot, first] = slot_of_row(row.id, row.id_is_string);
    switch (options_.reduce) {
      case Reduce::kMean: {
        double* acc = values_[slot];
        for (std::size_t c = 0; c < ncols_; ++c) acc[c] += weight * v[c];
        acc[ncols_] += weight;
        break;
      }
      case Reduce::kFirst:
        if (first) std::copy(v, v + ncols_, values_[slot]);
        break;
      case Reduce::kMax:
      case Reduce::kMin: {
        double* acc = values_[slot];
        if (first) {
          std::copy(v, v + ncols_, acc);
        } else if (options_.reduce == Reduce::kMax) {
          for (std::size_t c = 0; c < ncols_; ++c) acc[c] = std::max(acc[c], v[c]);
        } else {
          for (std::size_t c = 0; c < ncols_; ++c) acc[c] = std::min(acc[c], v[c]);
        }
        break;
      }
      case Reduce::kMedian: {
        if (occurrences_.size() >= UINT32_MAX - 1) {
          fail("--reduce median holds at most {} rows", UINT32_MAX - 1);
        }
        auto occ = static_cast<std::uint32_t>(occurrences_.size());
        std::copy(v, v + ncols_, occurrences_.append());
        *next_.append() = *head_[slot];
        *head_[slot] = occ + 1;
        break;
      }
    }
  }

  // The slot of a row's id (made for an id not seen before), and whether it is the id's first
  // row.
  std::pair<std::uint32_t, bool> slot_of_row(std::string_view id, bool id_is_string) {
    bool inserted = false;
    std::uint32_t slot = table_.insert(id, inserted);
    if (inserted) new_slot();
    ++report_.rows_read;
    std::uint8_t& flags = flags_[slot];
    const bool first = (flags & kSeen) == 0;
    if (first) {
      flags |= kSeen | ((id_is_string || (flags & kExpected)) ? 0 : kNumber);
      if (expecting_) seen_order_.push_back(slot);
    }
    return {slot, first};
  }

  Report finish_report() {
    Report& r = report_;
    r.distinct_ids = 0;
    for (std::uint32_t s = 0; s < table_.size(); ++s) {
      std::uint8_t f = flags_[s];
      if (f & kSeen) ++r.distinct_ids;
      if (!expecting_) continue;
      if ((f & kExpected) && !(f & kSeen)) {
        if (r.first_missing.size() < kListed) r.first_missing.emplace_back(table_.id_of(s));
        ++r.missing;
      }
      if (!(f & kExpected)) {
        if (r.first_unexpected.size() < kListed) r.first_unexpected.emplace_back(table_.id_of(s));
        ++r.unexpected;
      }
    }
    r.duplicate_rows = r.rows_read - r.distinct_ids;
    return r;
  }

  bool bound() const { return bound_; }
  std::uint32_t slots() const { return table_.size(); }
  void reserve(std::size_t ids) { table_.reserve(ids); }

  bool all_canonical_int64_ids(const std::vector<std::uint32_t>& slots) const {
    return std::all_of(slots.begin(), slots.end(), [&](std::uint32_t slot) {
      return (flags_[slot] & kNumber) && data::is_canonical_int64(table_.id_of(slot));
    });
  }

  void write(const std::filesystem::path& output, data::OutputFormat format) {
    data::PredictionSchema schema = schema_;
    switch (format) {
      case data::OutputFormat::kJsonl:
        // JSONL keeps the layout it was given; CSV e0..e{d-1} columns are an embedding.
        schema.embedding = any_jsonl_ ? jsonl_embedding_ : schema_.embedding;
        break;
      case data::OutputFormat::kCsv:
      case data::OutputFormat::kParquet:
        break;
    }
    std::vector<std::uint32_t> order = output_order();
    // Parquet types the id column before the first row: int64 when every id allows it.
    const data::TableFacts facts{.integer_ids = format == data::OutputFormat::kParquet &&
                                                all_canonical_int64_ids(order)};
    auto writer = data::PredictionWriter::open(output, format, schema, facts);
    std::vector<double> row(ncols_);
    std::vector<double> column;
    std::vector<std::int32_t> indices;
    for (std::uint32_t slot : order) {
      const bool id_is_string = (flags_[slot] & kNumber) == 0;
      if (sparse_) {
        sparse_->reduce(slot, indices, row);
        writer->add_sparse(table_.id_of(slot), id_is_string, indices, row);
        continue;
      }
      reduce_into(slot, row, column);
      writer->add(table_.id_of(slot), id_is_string, row);
    }
    writer->commit();
    report_.rows_written = order.size();
  }

  Report& report() { return report_; }

 private:
  void init_storage() {
    if (schema_.sparse) {
      sparse_.emplace(options_.reduce);
      for (std::size_t s = 0; s < flags_.size(); ++s) sparse_->new_slot();
      return;
    }
    scratch_.resize(ncols_);
    switch (options_.reduce) {
      case Reduce::kMean:
        values_ = BlockArray<double>(ncols_ + 1);
        break;
      case Reduce::kMedian:
        occurrences_ = BlockArray<double>(ncols_);
        head_ = BlockArray<std::uint32_t>(1);
        break;
      default:
        values_ = BlockArray<double>(ncols_);
        break;
    }
    // Slots made by expect() before the columns were known.
    for (std::size_t s = 0; s < flags_.size(); ++s) append_storage();
  }

  void append_storage() {
    if (options_.reduce == Reduce::kMedian) {
      head_.append();
    } else {
      values_.append();
    }
  }

  void new_slot() {
    flags_.push_back(0);
    if (!bound_) return;
    if (sparse_) {
      sparse_->new_slot();
    } else {
      append_storage();
    }
  }

  void check_columns(const data::PredictionReader& reader) {
    const auto& cols = reader.schema().columns;
    std::vector<std::string> lacks, extra;
    std::unordered_map<std::string_view, bool> present;
    for (const auto& c : cols) {
      present[c] = true;
      if (!column_index_.contains(c)) extra.push_back(c);
    }
    for (const auto& c : schema_.columns) {
      if (!present.contains(c)) lacks.push_back(c);
    }
    if (lacks.empty() && extra.empty() && cols.size() == ncols_) return;
    auto list = [](const std::vector<std::string>& v) {
      std::string s =
          fmt::format("{}", fmt::join(v.begin(), v.begin() + std::min(v.size(), kListed), ", "));
      if (v.size() > kListed) s += fmt::format(" and {} more", v.size() - kListed);
      return s;
    };
    std::string diff;
    if (!lacks.empty()) diff += fmt::format("it lacks {}", list(lacks));
    if (!extra.empty())
      diff += fmt::format("{}it has {} not in {}", diff.empty() ? "" : "; ", list(extra),
                          schema_source_.filename().string());
    fail("{}: columns differ from {}: {} (columns are matched by name)", reader.path().string(),
         schema_source_.string(), diff);
  }

  std::vector<std::uint32_t> output_order() {
    std::vector<std::uint32_t> order;
    order.reserve(report_.distinct_ids);
    if (options_.order == Order::kFirstSeen && expecting_) {
      order = seen_order_;
      return order;
    }
    // Slots count up in insertion order: expected ids first (input order), then the rest in
    // first-seen order.
    for (std::uint32_t s = 0; s < table_.size(); ++s) {
      if (flags_[s] & kSeen) order.push_back(s);
    }
    if (options_.order == Order::kId) sort_by_id(order);
    return order;
  }

  void sort_by_id(std::vector<std::uint32_t>& order) {
    bool integers = true, fits = true;
    std::vector<std::pair<std::int64_t, std::uint32_t>> keyed;
    keyed.reserve(order.size());
    for (std::uint32_t s : order) {
      std::string_view id = table_.id_of(s);
      if (!is_integer(id)) {
        integers = false;
        break;
      }
      std::int64_t v = 0;
      auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), v);
      if (ec != std::errc() || end != id.data() + id.size()) fits = false;
      if (fits) keyed.emplace_back(v, s);
    }
    if (integers && fits) {
      std::sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
        if (a.first != b.first) return a.first < b.first;
        return table_.id_of(a.second) < table_.id_of(b.second);
      });
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = keyed[i].second;
      return;
    }
    keyed = {};
    if (integers) {
      std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return integer_less(table_.id_of(a), table_.id_of(b));
      });
    } else {
      std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return table_.id_of(a) < table_.id_of(b);
      });
    }
  }

  void reduce_into(std::uint32_t slot, std::vector<double>& row, std::vector<double>& column) {
    switch (options_.reduce) {
      case Reduce::kMean: {
        const double* acc = values_[slot];
        for (std::size_t c = 0; c < ncols_; ++c) row[c] = acc[c] / acc[ncols_];
        return;
      }
      case Reduce::kMedian: {
        for (std::size_t c = 0; c < ncols_; ++c) {
          column.clear();
          for (std::uint32_t o = *head_[slot]; o != 0; o = *next_[o - 1]) {
            column.push_back(occurrences_[o - 1][c]);
          }
          std::size_t k = column.size() / 2;
          std::nth_element(column.begin(), column.begin() + k, column.end());
          double upper = column[k];
          if (column.size() % 2 == 1) {
            row[c] = upper;
          } else {
            double lower = *std::max_element(column.begin(), column.begin() + k);
            row[c] = (lower + upper) / 2;
          }
        }
        return;
      }
      default: {
        const double* acc = values_[slot];
        std::copy(acc, acc + ncols_, row.begin());
        return;
      }
    }
  }

  const Options& options_;
  bool expecting_;
  IdTable table_;
  Report report_;
  std::vector<std::uint8_t> flags_;
  std::vector<std::uint32_t> seen_order_;  // only when expecting: else slot order is the same
  bool bound_ = false;
  data::PredictionSchema schema_;
  std::filesystem::path schema_source_;
  std::size_t ncols_ = 0;
  std::unordered_map<std::string, std::size_t> column_index_;
  std::vector<std::size_t> map_;  // this input's column -> schema column
  bool identity_ = true;
  std::vector<double> scratch_;
  bool any_jsonl_ = false;
  bool jsonl_embedding_ = false;
  BlockArray<double> values_;         // mean: sums and the weight sum; max, min, first: values
  BlockArray<double> occurrences_;    // median: every row's values
  BlockArray<std::uint32_t> next_;    // median: the slot's previous occurrence + 1
  BlockArray<std::uint32_t> head_;    // median: the slot's last occurrence + 1
  std::optional<SparseSums> sparse_;  // sparse tables: every reduction
};

void check_options(const std::vector<std::filesystem::path>& inputs,
                   const std::filesystem::path& output, const Options& options) {
  if (inputs.empty()) fail_usage("merge: no input files");
  if (!options.weights.empty()) {
    if (options.weights.size() != inputs.size()) {
      fail_usage("--weights: {} weights for {} input files", options.weights.size(), inputs.size());
    }
    if (options.reduce != Reduce::kMean) fail_usage("--weights applies to --reduce mean only");
    for (double w : options.weights) {
      if (!std::isfinite(w) || w <= 0) fail_usage("--weights: {} is not a positive number", w);
    }
  }
  if (options.expected_ids && options.expect_input) {
    fail_usage("merge: expected ids given both as a list and as a file");
  }
  bool expecting = options.expected_ids || options.expect_input;
  if (options.order == Order::kInput && !expecting) {
    fail_usage("--order input needs --expect (the input whose order to follow)");
  }
  if (options.allow_missing && !expecting) fail_usage("--allow-missing needs --expect");
  std::error_code ec;
  for (const auto& in : inputs) {
    if (std::filesystem::equivalent(in, output, ec)) {
      fail_usage("{}: the output is also an input; write the merge elsewhere", output.string());
    }
  }
}

void read_expectations(Merger& merger, const Options& options, Report& report) {
  if (options.expected_ids) {
    for (const auto& id : *options.expected_ids) merger.expect(id.text, id.is_string);
    return;
  }
  const ExpectInput& e = *options.expect_input;
  auto reader = data::RowReader::open(e.path, e.format, e.columns, options.reader);
  data::Row row;
  data::BadRow bad;
  for (;;) {
    auto r = reader->next(row, bad);
    if (r == data::RowReader::Result::kEnd) break;
    if (r == data::RowReader::Result::kBadRow) {
      if (!e.skip_bad_rows) fail("{}:{}: {}", e.path.string(), bad.line, bad.reason);
      ++report.expected_bad_rows;
      continue;
    }
    merger.expect(row.id.text, row.id.is_string);
  }
}

}  // namespace

Report merge_files(const std::vector<std::filesystem::path>& inputs,
                   const std::filesystem::path& output, const Options& options) {
  check_options(inputs, output, options);
  const data::OutputFormat out_format =
      options.output_format ? *options.output_format : data::resolve_output_format(output);
  // A format this build cannot write is refused before any input is read (the kind of rows is
  // checked once the first input says it).
  data::check_table_format(output, out_format, std::nullopt, data::parquet_available());
  const bool expecting = options.expected_ids || options.expect_input;
  Merger merger(options, expecting);
  Report& report = merger.report();
  if (expecting) read_expectations(merger, options, report);

  // Sizes guide the hash table: the ids still to come are estimated from the bytes left and
  // how many new ids per byte the last input brought (many for shards, none for an ensemble
  // of the same ids), so that it grows once rather than by many doublings.
  std::vector<std::uint64_t> sizes(inputs.size(), 0);
  std::uint64_t bytes_left = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    std::error_code ec;
    sizes[i] = std::filesystem::is_regular_file(inputs[i], ec)
                   ? std::filesystem::file_size(inputs[i], ec)
                   : 0;
    if (ec) sizes[i] = 0;
    bytes_left += sizes[i];
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    double weight = options.weights.empty() ? 1.0 : options.weights[i];
    auto reader = data::PredictionReader::open(inputs[i], std::nullopt, options.reader);
    ++report.files;
    bytes_left -= sizes[i];
    std::uint32_t slots_before = merger.slots();
    if (merger.bind(*reader)) {
      data::PredictionRow row;
      while (reader->next(row)) merger.add(row, weight);
      if (sizes[i] > 0 && bytes_left > 0) {
        double new_per_byte = double(merger.slots() - slots_before) / double(sizes[i]);
        auto estimate = static_cast<std::size_t>(new_per_byte * double(bytes_left) * 1.02);
        // Never more than 4x what is known: a small first file must not reserve gigabytes.
        std::size_t now = merger.slots();
        merger.reserve(now + std::min(estimate, 3 * now + (std::size_t{1} << 20)));
      }
    } else if (!reader->warning()) {
      report.warnings.push_back(fmt::format("{}: empty file: no rows", inputs[i].string()));
    }
    if (reader->warning()) report.warnings.push_back(*reader->warning());
  }
  if (!merger.bound()) fail("merge: no input has a header or a row; nothing to merge");

  Report done = merger.finish_report();
  if (done.missing > 0 && !options.allow_missing) {
    throw MissingIdsError(
        fmt::format("{} expected ids have no prediction (first: {}); nothing written", done.missing,
                    fmt::join(done.first_missing, ", ")),
        done);
  }
  merger.write(output, out_format);
  return merger.report();
}

std::vector<std::filesystem::path> shard_files(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (auto& shard : list_shards(dir)) files.push_back(std::move(shard.path));
  if (files.empty()) {
    fail("{}: no shard files (shard_<N> or shard_<RANK>_<N>, .csv or .jsonl) in this directory",
         dir.string());
  }
  return files;
}

std::string summary_line(const Report& r, const std::filesystem::path& output, bool written) {
  std::string line = fmt::format("merge: {} rows from {} files, {} distinct ids, {} duplicate rows",
                                 r.rows_read, r.files, r.distinct_ids, r.duplicate_rows);
  if (r.expected_rows > 0 || r.missing > 0 || r.unexpected > 0) {
    line += fmt::format(", {} missing, {} unexpected", r.missing, r.unexpected);
  }
  if (written) {
    line += fmt::format("; wrote {} rows to {}", r.rows_written, output.string());
  } else {
    line += "; nothing written";
  }
  return line;
}

}  // namespace mcinfer::merge
