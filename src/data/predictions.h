#pragma once
// Prediction tables: what `run` writes (shards and output) and `merge` reads and writes.
// CSV: header `id,<col>,...`, one row per prediction. JSONL: {"id": ..., "<col>": v, ...}, or
// for embeddings {"id": ..., "embedding": [v, ...]} (CSV then names the columns e0..e{d-1}).
// Floats are printed in the shortest form that round-trips.

#include <span>
#include <string>
#include <vector>

#include "data/rows.h"

namespace mcinfer::data {

struct PredictionSchema {
  std::vector<std::string> columns;  // value columns in order (labels, or e0..e{d-1})
  bool embedding = false;            // JSONL uses one "embedding" array instead of columns
};

// The CSV header line with its newline ("id,neg,pos\n"); empty for JSONL.
std::string prediction_header(const PredictionSchema& schema, Format format);

// Appends one row, newline included. Ids are written back as read: CSV fields quoted only when
// needed, JSON strings as strings and JSON numbers with their original spelling.
void append_prediction(const PredictionSchema& schema, Format format, const RowId& id,
                       std::span<const float> values, std::string& out);
void append_prediction(const PredictionSchema& schema, Format format, const RowId& id,
                       std::span<const double> values, std::string& out);

}  // namespace mcinfer::data
