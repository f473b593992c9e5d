#pragma once
// Merging prediction tables (shards of one run, outputs of several runs or models): rows that
// share an id are reduced to one, with proof that nothing is missing when the input is known.
// `mcinfer merge` and the in-process merge at the end of `mcinfer run` both use this.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "data/rows.h"

namespace mcinfer::merge {

enum class Reduce { kMean, kMedian, kMax, kMin, kFirst };
enum class Order { kInput, kId, kFirstSeen };

struct Options {
  Reduce reduce = Reduce::kMean;
  std::vector<double> weights;  // one per input file; empty means all 1
  // Ids of the original input, in input order (duplicates allowed). When set, missing and
  // unexpected ids are reported, and Order::kInput writes rows in this order.
  std::optional<std::vector<data::RowId>> expected_ids;
  Order order = Order::kFirstSeen;
  bool allow_missing = false;
  std::optional<data::Format> output_format;  // default: from the output's extension
};

struct Report {
  std::uint64_t rows_read = 0;
  std::uint64_t distinct_ids = 0;
  std::uint64_t rows_written = 0;
  std::uint64_t duplicate_rows = 0;  // rows_read - distinct_ids
  std::uint64_t missing = 0;         // expected ids with no row
  std::uint64_t unexpected = 0;      // ids not among the expected ones
  std::vector<std::string> first_missing;     // up to 10
  std::vector<std::string> first_unexpected;  // up to 10
  std::vector<std::string> warnings;          // e.g. a torn last line dropped
};

// Reads every input, reduces, and writes `output` atomically (temporary file, fsync, rename).
// Throws Error naming file:line for unreadable input, and when ids are missing without
// allow_missing (then nothing is written at `output`).
Report merge_files(const std::vector<std::filesystem::path>& inputs,
                   const std::filesystem::path& output, const Options& options);

}  // namespace mcinfer::merge
