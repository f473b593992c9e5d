#pragma once
// Reads a prediction file (CSV or JSONL written by mcinfer) into memory for comparisons.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "data/prediction_reader.h"

namespace mcinfer::testing {

struct Table {
  std::vector<std::string> columns;
  std::vector<std::string> ids;
  std::vector<std::vector<double>> values;
  std::optional<std::string> warning;  // the reader's note on a file it accepted with doubts
};

inline Table read_table(const std::filesystem::path& path) {
  auto reader = data::PredictionReader::open(path, std::nullopt);
  Table t;
  if (reader->has_schema()) t.columns = reader->schema().columns;
  data::PredictionRow row;
  while (reader->next(row)) {
    t.ids.emplace_back(row.id);
    t.values.emplace_back(row.values.begin(), row.values.end());
  }
  t.warning = reader->warning();
  return t;
}

// A sparse prediction file (JSONL or Parquet rows of indices and values, as mcinfer writes a
// sparse encoder's) with each row made dense: `width` values, zero where the row has no index.
inline Table read_sparse_as_dense(const std::filesystem::path& path, std::size_t width) {
  auto reader = data::PredictionReader::open(path, std::nullopt);
  Table t;
  data::PredictionRow row;
  while (reader->next(row)) {
    t.ids.emplace_back(row.id);
    std::vector<double>& dense = t.values.emplace_back(width, 0.0);
    for (std::size_t k = 0; k < row.indices.size(); ++k)
      dense.at(static_cast<std::size_t>(row.indices[k])) = row.values[k];
  }
  return t;
}

// Largest absolute difference between two tables with the same ids in the same order.
inline double max_abs_difference(const Table& a, const Table& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.values.size() && i < b.values.size(); ++i) {
    for (std::size_t j = 0; j < a.values[i].size() && j < b.values[i].size(); ++j) {
      worst = std::max(worst, std::abs(a.values[i][j] - b.values[i][j]));
    }
  }
  return worst;
}

}  // namespace mcinfer::testing
