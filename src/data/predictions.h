#pragma once
// Prediction tables: what `run` writes (shards and output) and `merge` reads and writes.
// CSV: header `id,<col>,...`, one row per prediction. Sparse rows: JSONL (see
// PredictionSchema::sparse) and Parquet (parquet_tables.cc), never CSV (formats.h's table). JSONL:
// {"id": ..., "<col>": v, ...}, or for embeddings {"id": ..., "embedding": [v, ...]} (CSV then
// names the columns e0..e{d-1}). Several outputs of one pass (`run --outputs probs,cls`) are groups
// of columns: CSV names them
// `<output>.<label>` or `<output>.e<i>` (`probs.neg,probs.pos,cls.e0,...`), JSONL gives each
// output one field, an object of labels or an array ({"id": 1, "probs": {"neg": 0.1, "pos":
// 0.9}, "cls": [0.3, ...]}).
// Floats are printed in the shortest form that round-trips. A NaN or infinity (a model
// failure, never a prediction) is written as nan/inf/-inf in CSV and null in JSONL, so that
// merge stops on it with the file and line.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/rows.h"

namespace mcinfer::data {

// One output of several: `count` consecutive columns, after the previous group's.
struct OutputGroup {
  std::string name;       // the JSONL field, the CSV prefix: one of kOutputGroupNames
  std::size_t count = 0;  // columns
  bool labelled = false;  // columns "<name>.<label>" (JSONL: an object), else "<name>.e<i>"
  bool operator==(const OutputGroup&) const = default;
};

// The outputs `run --outputs` writes (model::OutputKind spells them the same; a test checks).
// Column groups are recognised only under these names, so a classifier's own label "a.b" stays
// a column of its own.
inline constexpr std::string_view kOutputGroupNames[] = {"probs", "logits", "cls",
                                                         "mean",  "max",    "normalized"};

bool is_output_group_name(std::string_view name);

// Whether value columns are exactly e0..e{d-1}: an embedding (d > 0).
bool is_embedding_columns(const std::vector<std::string>& columns);

struct PredictionSchema {
  std::vector<std::string> columns;  // value columns in order (labels, or e0..e{d-1})
  bool embedding = false;            // JSONL uses one "embedding" array instead of columns
  std::vector<OutputGroup> groups;   // empty, or covering `columns` exactly (then !embedding)
  // Sparse token weights (--task sparse): JSONL writes the nonzero values,
  // {"id": ..., "indices": [i, ...], "values": [v, ...]}, indices ascending, values as float32;
  // Parquet two list columns. A run's schema keeps its dense columns e0..e{vocab-1} (with
  // `embedding`: what a batch's values are), a table read back has none. Last, so that
  // {columns, embedding, groups} still reads.
  bool sparse = false;
};

// What the schema's rows hold, as formats.h's table names it.
RowKind row_kind(const PredictionSchema& schema);

// A sparse row's index: at most the largest int32 (Parquet's list<int32>), far above any
// vocabulary.
inline constexpr std::int64_t kMaxSparseIndex = 2147483647;

// Appends one sparse JSONL row, newline included: {"id":...,"indices":[...],"values":[...]},
// values as float32. The indices are ascending (the caller's rows are).
void append_sparse_prediction(std::string_view id, bool id_is_string,
                              std::span<const std::int32_t> indices, std::span<const double> values,
                              std::string& out);

// The groups that CSV columns named as above form ("probs.neg", "probs.pos", "cls.e0", ...), or
// none when any column is not such a name or a group's columns are not consecutive.
std::vector<OutputGroup> output_groups_of(const std::vector<std::string>& columns);

// The CSV header line with its newline ("id,neg,pos\n"); empty for JSONL.
std::string prediction_header(const PredictionSchema& schema, LineFormat format);

// Appends one row, newline included. Ids are written back as read: CSV fields quoted only when
// needed, JSON strings as strings and JSON numbers with their original spelling.
void append_prediction(const PredictionSchema& schema, LineFormat format, const RowId& id,
                       std::span<const float> values, std::string& out);
void append_prediction(const PredictionSchema& schema, LineFormat format, const RowId& id,
                       std::span<const double> values, std::string& out);
// The same with the id as a view (no RowId to build per row).
void append_prediction(const PredictionSchema& schema, LineFormat format, std::string_view id,
                       bool id_is_string, std::span<const double> values, std::string& out);

// CSV field quoting: only when the text has a comma, quote, CR or LF, or starts or ends with
// a space or tab (which some readers would trim).
void append_csv_field(std::string_view text, std::string& out);
// A JSON string literal: quotes, backslash and control characters escaped; other bytes as
// they are (invalid UTF-8 included, which mcinfer's readers pass through).
void append_json_string(std::string_view text, std::string& out);

}  // namespace mcinfer::data
