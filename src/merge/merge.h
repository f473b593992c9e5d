#pragma once
// Merging prediction tables (shards of one run, outputs of several runs or models): rows that
// share an id are reduced to one, with proof that nothing is missing when the input is known.
// `mcinfer merge` and the in-process merge at the end of `mcinfer run` both use this.
//
// Semantics:
// - Inputs are read with data::PredictionReader (CSV, JSONL or Parquet by extension). Columns are
//   matched by name; the first input with columns fixes their order, and an input whose
//   column set differs is an Error listing the difference. An empty input (a shard whose
//   writer was killed before its header) adds nothing and is reported as a warning.
// - Ids compare as exact strings (a CSV "5" and a JSON 5 are the same id); the output keeps
//   the kind (JSON string or number) of an id's first row.
// - Every row contributes with its file's weight (mean only): mean = sum(w*x) / sum(w).
// - Sparse tables (rows of indices and values) merge only with sparse tables, each id's rows
//   reduced over the union of their indices as their dense vectors would be (sparse_sums.h).
//   median averages the two middle values of an even count, as pandas does. first is the
//   first row in input-file order, then line order.
// - With expected ids (expected_ids or expect_input; duplicates allowed), ids with no row are
//   "missing" and ids not expected are "unexpected". Unexpected rows are still written (never
//   silently dropped): after the expected ones under Order::kInput.
// - When ids are missing and allow_missing is false, merge_files throws MissingIdsError (which
//   carries the full Report) before writing anything: `output` is left untouched.
// - Order::kInput: the expected ids' first-occurrence order (needs expectations).
//   Order::kFirstSeen: the order rows' ids first appear. Order::kId: numeric when every
//   written id is an integer ([-]digits, any length), else by bytes (UTF-8 code points).
// - The output (data::PredictionWriter: CSV, JSONL or Parquet) is written to a temporary file,
//   fsynced and renamed over `output`.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/rows.h"

namespace mcinfer::merge {

enum class Reduce { kMean, kMedian, kMax, kMin, kFirst };
enum class Order { kInput, kId, kFirstSeen };

// The original input, streamed for its ids. `columns` decides which rows are good exactly
// as the run's reader did: `mcinfer merge --expect` reads ids only (read_text = false), while
// `run` passes its own ColumnSpec so that rows it skipped as bad (--on-bad-row skip) are not
// expected either.
struct ExpectInput {
  std::filesystem::path path;
  data::InputFormat format = data::InputFormat::kCsv;
  data::ColumnSpec columns = ids_only();  // id_col absent from the file: ids are row numbers
  bool skip_bad_rows = false;             // else a bad row is an Error naming file:line

  static data::ColumnSpec ids_only(std::string id_col = "id") {
    data::ColumnSpec c;
    c.id_col = std::move(id_col);
    c.read_text = false;
    return c;
  }
};

struct Options {
  Reduce reduce = Reduce::kMean;
  std::vector<double> weights;  // one per input file; empty means all 1; finite and > 0
  // Ids of the original input, in input order (duplicates allowed). When set, missing and
  // unexpected ids are reported, and Order::kInput writes rows in this order.
  std::optional<std::vector<data::RowId>> expected_ids;
  std::optional<ExpectInput> expect_input;  // the same, read from a file; not with expected_ids
  Order order = Order::kFirstSeen;
  bool allow_missing = false;
  std::optional<data::OutputFormat> output_format;  // default: from the output's extension
  data::ReaderOptions reader;                       // row size limit and read size for the inputs
};

struct Report {
  std::uint64_t files = 0;
  std::uint64_t rows_read = 0;
  std::uint64_t distinct_ids = 0;
  std::uint64_t rows_written = 0;
  std::uint64_t duplicate_rows = 0;           // rows_read - distinct_ids
  std::uint64_t expected_rows = 0;            // ids read from the expectation (duplicates included)
  std::uint64_t expected_bad_rows = 0;        // skipped with ExpectInput::skip_bad_rows
  std::uint64_t missing = 0;                  // expected ids with no row
  std::uint64_t unexpected = 0;               // ids not among the expected ones
  std::vector<std::string> first_missing;     // up to 10, in input order
  std::vector<std::string> first_unexpected;  // up to 10, in first-seen order
  std::vector<std::string> warnings;          // e.g. a torn last line dropped
};

// Thrown when expected ids have no row and allow_missing is false; nothing was written.
class MissingIdsError : public Error {
 public:
  MissingIdsError(const std::string& message, Report report)
      : Error(message), report_(std::move(report)) {}
  const Report& report() const { return report_; }

 private:
  Report report_;
};

// Reads every input, reduces, and writes `output` atomically (temporary file, fsync, rename).
// Throws Error naming file:line for unreadable input, UsageError for inconsistent options,
// and MissingIdsError (see above).
Report merge_files(const std::vector<std::filesystem::path>& inputs,
                   const std::filesystem::path& output, const Options& options);

// The shard files of a run directory (merge/shard_names.h: shard_<N> and shard_<RANK>_<N>, .csv
// or .jsonl, by rank and N). Throws Error when there are none.
std::vector<std::filesystem::path> shard_files(const std::filesystem::path& dir);

// The one-line summary `mcinfer merge` prints.
std::string summary_line(const Report& report, const std::filesystem::path& output, bool written);

}  // namespace mcinfer::merge
