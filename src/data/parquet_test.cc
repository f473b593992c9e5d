// Parquet in and out: the row reader (column kinds, pairs, nulls, missing columns, empty files,
// several row groups), the prediction writer (layout, stored schema, atomicity) and reader, and
// `merge` over Parquet inputs. The inputs are written by Arrow itself (tests/support/parquet.h).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/error.h"
#include "data/parquet.h"
#include "data/prediction_reader.h"
#include "data/prediction_writer.h"
#include "data/rows.h"
#include "merge/merge.h"
#include "support/parquet.h"
#include "support/paths.h"

namespace mcinfer::data {
namespace {

namespace fs = std::filesystem;
using testing::NamedColumn;
using testing::TextKind;
using testing::Texts;

struct ReadBack {
  std::vector<Row> rows;
  std::vector<BadRow> bad;
};

ReadBack read_rows(const fs::path& path, const ColumnSpec& columns = {},
                   const ReaderOptions& options = {}) {
  ReadBack out;
  auto reader = RowReader::open(path, InputFormat::kParquet, columns, options);
  Row row;
  BadRow bad;
  for (;;) {
    auto r = reader->next(row, bad);
    if (r == RowReader::Result::kEnd) break;
    if (r == RowReader::Result::kRow) out.rows.push_back(row);
    if (r == RowReader::Result::kBadRow) out.bad.push_back(bad);
  }
  EXPECT_EQ(reader->bytes_read(), reader->file_size()) << "progress ends at the total";
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ParquetRows, StringColumnsAcrossRowGroupsAndBatches) {
  const fs::path path = testing::scratch_dir("pq_rows") / "in.parquet";
  Texts ids, texts, pairs;
  for (int i = 0; i < 20000; ++i) {
    ids.push_back("r" + std::to_string(i));
    texts.push_back("text " + std::to_string(i * 7));
    pairs.push_back(i % 3 == 0 ? "" : "pair " + std::to_string(i));
  }
  testing::write_parquet(path,
                         {{"text", testing::text_array(texts)},
                          {"other", testing::int64_array(std::vector<std::int64_t>(20000, 5))},
                          {"id", testing::text_array(ids)},
                          {"second", testing::text_array(pairs, TextKind::kLargeString)}},
                         3000);
  ColumnSpec columns;
  columns.text_pair_col = "second";
  auto got = read_rows(path, columns);
  ASSERT_EQ(got.rows.size(), 20000u);
  EXPECT_TRUE(got.bad.empty());
  for (std::size_t i = 0; i < got.rows.size(); i += 997) {
    const Row& row = got.rows[i];
    EXPECT_EQ(row.index, i);
    EXPECT_EQ(row.line, i + 1);
    EXPECT_EQ(row.id.text, *ids[i]);
    EXPECT_TRUE(row.id.is_string);
    EXPECT_EQ(row.text, *texts[i]);
    ASSERT_TRUE(row.text_pair);
    EXPECT_EQ(*row.text_pair, *pairs[i]);
  }
}

TEST(ParquetRows, DictionaryTextAndIntegerIds) {
  const fs::path dir = testing::scratch_dir("pq_kinds");
  const Texts texts = {"a", "b", "a", "c\xc3\xa9", "b"};
  testing::write_parquet(dir / "in.parquet",
                         {{"id", testing::int64_array({10, -2, 3000000000000, 0, 7})},
                          {"text", testing::text_array(texts, TextKind::kDictionary)}});
  auto got = read_rows(dir / "in.parquet");
  ASSERT_EQ(got.rows.size(), 5u);
  EXPECT_EQ(got.rows[2].id.text, "3000000000000");
  EXPECT_EQ(got.rows[1].id.text, "-2");
  EXPECT_FALSE(got.rows[0].id.is_string);
  EXPECT_EQ(got.rows[3].text, "c\xc3\xa9");
  EXPECT_EQ(got.rows[4].text, "b");

  // No id column: row numbers, as CSV gives them.
  testing::write_parquet(dir / "noid.parquet", {{"text", testing::text_array(texts)}});
  auto numbered = read_rows(dir / "noid.parquet");
  ASSERT_EQ(numbered.rows.size(), 5u);
  EXPECT_EQ(numbered.rows[4].id.text, "4");
  EXPECT_FALSE(numbered.rows[4].id.is_string);
  // Ids only, from a file without an id column: counted from the metadata.
  ColumnSpec ids_only;
  ids_only.read_text = false;
  EXPECT_EQ(read_rows(dir / "noid.parquet", ids_only).rows.size(), 5u);

  // Parquet strings are UTF-8 by definition: Arrow refuses a file whose strings are not, and
  // the error names the file (CSV and JSONL pass bytes through; a Parquet writer never makes
  // such a file).
  testing::write_parquet(dir / "latin1.parquet",
                         {{"text", testing::text_array({"ok", "caf\xe9"}, TextKind::kDictionary)}});
  try {
    read_rows(dir / "latin1.parquet");
    ADD_FAILURE() << "invalid UTF-8 was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("latin1.parquet: cannot read the rows"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("UTF8"), std::string::npos) << e.what();
  }
}

TEST(ParquetRows, NullsAreBadRowsNamingRowAndColumn) {
  const fs::path path = testing::scratch_dir("pq_nulls") / "in.parquet";
  testing::write_parquet(path, {{"id", testing::text_array({"a", "b", std::nullopt, "d"})},
                                {"text", testing::text_array({"x", std::nullopt, "z", "w"})}});
  auto got = read_rows(path);
  ASSERT_EQ(got.rows.size(), 2u);
  ASSERT_EQ(got.bad.size(), 2u);
  EXPECT_EQ(got.bad[0].line, 2u);
  EXPECT_EQ(got.bad[0].reason, "column 'text' is null in row 2");
  EXPECT_EQ(got.bad[1].reason, "column 'id' is null in row 3");
  EXPECT_EQ(got.rows[1].id.text, "d");
  EXPECT_EQ(got.rows[1].index, 3u);
}

TEST(ParquetRows, RowsOverTheLimitAreBadRows) {
  // As in CSV and JSONL, a row whose text and pair together pass the readers' row limit
  // (ReaderOptions::max_row_bytes, 64 MiB unless set) is a bad row naming the limit; the rows
  // around it are read.
  const fs::path path = testing::scratch_dir("pq_limit") / "in.parquet";
  testing::write_parquet(path,
                         {{"text", testing::text_array({"short", std::string(200, 'x'), "ok"})},
                          {"pair", testing::text_array({"a", "b", std::string(99, 'y')})}});
  ColumnSpec pairs;
  pairs.text_pair_col = "pair";
  ReaderOptions limit;
  limit.max_row_bytes = 100;
  auto got = read_rows(path, pairs, limit);
  ASSERT_EQ(got.rows.size(), 1u);
  EXPECT_EQ(got.rows[0].text, "short");
  ASSERT_EQ(got.bad.size(), 2u);
  EXPECT_EQ(got.bad[0].index, 1u);
  EXPECT_EQ(got.bad[0].reason, "row larger than 100 bytes");
  EXPECT_EQ(got.bad[1].index, 2u);
}

TEST(ParquetRows, MissingColumnsWrongTypesAndBadFiles) {
  const fs::path dir = testing::scratch_dir("pq_errors");
  testing::write_parquet(dir / "in.parquet", {{"id", testing::text_array({"a"})},
                                              {"body", testing::text_array({"x"})},
                                              {"score", testing::float_array({1.5f})}});
  EXPECT_EQ(error_of([&] { read_rows(dir / "in.parquet"); }),
            (dir / "in.parquet").string() +
                ": no column 'text' in the schema (columns found: id, body, score)");
  ColumnSpec floats;
  floats.text_col = "score";
  EXPECT_NE(error_of([&] {
              read_rows(dir / "in.parquet", floats);
            }).find("in.parquet: column 'score' is of type float; expected string"),
            std::string::npos);
  std::ofstream(dir / "empty.parquet").close();
  EXPECT_NE(
      error_of([&] { read_rows(dir / "empty.parquet"); }).find("empty.parquet: not a Parquet file"),
      std::string::npos);
  std::ofstream(dir / "text.parquet") << "id,text\n1,a\n";
  EXPECT_NE(
      error_of([&] { read_rows(dir / "text.parquet"); }).find("text.parquet: not a Parquet file"),
      std::string::npos);
  EXPECT_NE(
      error_of([&] { read_rows(dir / "absent.parquet"); }).find("absent.parquet: no such file"),
      std::string::npos);
  // A footer whose size statistics contradict the schema (found by fuzz_parquet): the Parquet
  // library throws its own exception from the metadata, which must come out as an Error naming
  // the file, not escape as such (error_of catches Errors only).
  const fs::path malformed = testing::fixture("parquet/malformed_size_statistics.parquet");
  EXPECT_NE(error_of([&] {
              read_rows(malformed);
            }).find("malformed_size_statistics.parquet: malformed Parquet metadata: "),
            std::string::npos);
  // Footers whose row counts a reader of no column would count through (2^64 - 27 rows): found
  // by fuzz_parquet as inputs that ran past its timeout; the ids-only read is the one that
  // trusts the footer alone.
  ColumnSpec ids_only;
  ids_only.read_text = false;
  for (const auto& [file, message] :
       {std::pair{"negative_row_count.parquet", "row group 0 claims -27 rows"},
        std::pair{"row_counts_disagree.parquet", "the row groups hold"}}) {
    const fs::path path = testing::fixture(std::string("parquet/") + file);
    const std::string error = error_of([&] { read_rows(path, ids_only); });
    EXPECT_NE(error.find(std::string(file) + ": malformed Parquet metadata: " + message),
              std::string::npos)
        << error;
  }
  // A table of no rows has no rows.
  testing::write_parquet(dir / "zero.parquet",
                         {{"id", testing::text_array({})}, {"text", testing::text_array({})}});
  EXPECT_TRUE(read_rows(dir / "zero.parquet").rows.empty());
}

PredictionSchema labels(std::vector<std::string> columns) {
  PredictionSchema s;
  s.columns = std::move(columns);
  return s;
}

void write_table(const fs::path& path, const PredictionSchema& schema,
                 const std::vector<std::pair<std::string, std::vector<double>>>& rows,
                 bool integer_ids) {
  auto writer =
      PredictionWriter::open(path, OutputFormat::kParquet, schema, {.integer_ids = integer_ids});
  for (const auto& [id, values] : rows) writer->add(id, !integer_ids, values);
  writer->commit();
}

TEST(ParquetTables, LabelsRoundTripAndStringIds) {
  const fs::path path = testing::scratch_dir("pq_labels") / "out.parquet";
  write_table(path, labels({"neg", "pos"}), {{"a", {0.25, 0.75}}, {"b,c", {0.5, 0.5}}}, false);
  auto table = testing::read_parquet(path);
  EXPECT_EQ(table->schema()->ToString(),
            "id: string not null\nneg: float not null\npos: float not null");
  auto reader = PredictionReader::open(path, std::nullopt);
  EXPECT_EQ(reader->format(), OutputFormat::kParquet);
  EXPECT_EQ(reader->schema().columns, (std::vector<std::string>{"neg", "pos"}));
  PredictionRow row;
  ASSERT_TRUE(reader->next(row));
  ASSERT_TRUE(reader->next(row));
  EXPECT_EQ(row.id, "b,c");
  EXPECT_TRUE(row.id_is_string);
  EXPECT_EQ(row.line, 2u);
  EXPECT_EQ(row.values[1], 0.5);
  EXPECT_FALSE(reader->next(row));
}

TEST(ParquetTables, EmbeddingIsAFixedSizeListThatReadsBackAsOne) {
  const fs::path path = testing::scratch_dir("pq_embedding") / "out.parquet";
  PredictionSchema schema = labels({"e0", "e1", "e2"});
  schema.embedding = true;
  std::vector<std::pair<std::string, std::vector<double>>> rows;
  for (int i = 0; i < 5000; ++i)
    rows.push_back({std::to_string(i * 3 - 7), {i * 0.5, -1.0 * i, 1.0f / (i + 1)}});
  write_table(path, schema, rows, true);
  auto table = testing::read_parquet(path);
  EXPECT_EQ(table->schema()->field(0)->type()->ToString(), "int64");
  EXPECT_EQ(table->schema()->field(1)->name(), "embedding");
  EXPECT_EQ(table->schema()->field(1)->type()->id(), arrow::Type::FIXED_SIZE_LIST)
      << table->schema()->ToString();
  auto reader = PredictionReader::open(path, std::nullopt);
  EXPECT_TRUE(reader->schema().embedding);
  EXPECT_EQ(reader->schema().columns.size(), 3u);
  PredictionRow row;
  for (int i = 0; i < 5000; ++i) {
    ASSERT_TRUE(reader->next(row));
    ASSERT_EQ(row.id, rows[i].first);
    ASSERT_FALSE(row.id_is_string);
    for (int k = 0; k < 3; ++k) ASSERT_EQ(row.values[k], static_cast<float>(rows[i].second[k]));
  }
  EXPECT_FALSE(reader->next(row));
}

TEST(ParquetTables, OutputGroupsAreColumnsAndLists) {
  const fs::path path = testing::scratch_dir("pq_groups") / "out.parquet";
  PredictionSchema schema = labels({"probs.neg", "probs.pos", "cls.e0", "cls.e1"});
  schema.groups = output_groups_of(schema.columns);
  write_table(path, schema, {{"1", {0.1, 0.9, 3, 4}}}, false);
  auto table = testing::read_parquet(path);
  EXPECT_EQ(table->schema()->field_names(),
            (std::vector<std::string>{"id", "probs.neg", "probs.pos", "cls"}));
  auto reader = PredictionReader::open(path, std::nullopt);
  EXPECT_EQ(reader->schema().columns, schema.columns);
  EXPECT_EQ(reader->schema().groups, schema.groups);
}

TEST(ParquetTables, UncommittedLeavesNothingAndBadValuesAreNamed) {
  const fs::path dir = testing::scratch_dir("pq_atomic");
  {
    auto writer =
        PredictionWriter::open(dir / "out.parquet", OutputFormat::kParquet, labels({"a"}), {});
    writer->add("1", true, std::vector<double>{1.0});
  }
  EXPECT_TRUE(fs::is_empty(dir)) << "no output, no temporary file";
  testing::write_parquet(dir / "nan.parquet", {{"id", testing::text_array({"x", "y"})},
                                               {"a", testing::float_array({1, NAN})}});
  auto reader = PredictionReader::open(dir / "nan.parquet", std::nullopt);
  PredictionRow row;
  EXPECT_EQ(error_of([&] {
              while (reader->next(row)) {
              }
            }),
            (dir / "nan.parquet").string() + ": row 2: column 'a': nan is not a finite number");
  testing::write_parquet(dir / "text.parquet",
                         {{"id", testing::text_array({"x"})}, {"a", testing::text_array({"1"})}});
  EXPECT_NE(error_of([&] {
              PredictionReader::open(dir / "text.parquet", std::nullopt);
            }).find("column 'a' is of type string; expected float32"),
            std::string::npos);
  // A list wider than any prediction (the schema is untrusted): refused before a column name is
  // made for each of its values.
  auto wide = arrow::MakeEmptyArray(arrow::fixed_size_list(arrow::float32(), (1 << 20) + 1));
  testing::write_parquet(dir / "wide.parquet",
                         {{"id", testing::text_array({})}, {"embedding", testing::ok(wide)}});
  EXPECT_EQ(error_of([&] { PredictionReader::open(dir / "wide.parquet", std::nullopt); }),
            (dir / "wide.parquet").string() +
                ": 1048577 values per row; a prediction table has at most 1048576");
}

TEST(ParquetMerge, ParquetInputsMergeIntoEveryFormat) {
  const fs::path dir = testing::scratch_dir("pq_merge");
  write_table(dir / "a.parquet", labels({"neg", "pos"}), {{"1", {0.0, 1.0}}, {"2", {0.5, 0.5}}},
              true);
  write_table(dir / "b.parquet", labels({"pos", "neg"}), {{"2", {0.25, 0.75}}, {"3", {1, 0}}},
              true);
  merge::Options options;
  options.expected_ids = std::vector<RowId>{{"3", false}, {"2", false}, {"1", false}};
  options.order = merge::Order::kInput;
  auto report =
      merge::merge_files({dir / "a.parquet", dir / "b.parquet"}, dir / "m.parquet", options);
  EXPECT_EQ(report.rows_written, 3u);
  auto reader = PredictionReader::open(dir / "m.parquet", std::nullopt);
  PredictionRow row;
  std::vector<std::string> ids;
  std::vector<double> negs;
  while (reader->next(row)) {
    ids.emplace_back(row.id);
    negs.push_back(row.values[0]);
    EXPECT_FALSE(row.id_is_string);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"3", "2", "1"}));
  EXPECT_EQ(negs, (std::vector<double>{0, 0.625, 0}));
  merge::merge_files({dir / "m.parquet"}, dir / "m.csv", {});
  EXPECT_EQ(testing::read_file(dir / "m.csv"), "id,neg,pos\n3,0,1\n2,0.625,0.375\n1,0,1\n");
}

// A list<T> array of `rows` from flat values and offsets, as another tool would write it.
std::shared_ptr<arrow::Array> list_array(const std::vector<std::int32_t>& offsets,
                                         std::shared_ptr<arrow::Array> items) {
  auto offsets_array = std::make_shared<arrow::Int32Array>(
      static_cast<std::int64_t>(offsets.size()), arrow::Buffer::FromVector(offsets));
  return testing::ok(arrow::ListArray::FromArrays(*offsets_array, *items));
}

TEST(ParquetTables, SparseRowsAreTwoListColumnsThatReadBack) {
  const fs::path path = testing::scratch_dir("pq_sparse") / "out.parquet";
  PredictionSchema schema;
  schema.sparse = true;
  std::vector<std::vector<std::int32_t>> indices;
  std::vector<std::vector<double>> values;
  {
    auto writer =
        PredictionWriter::open(path, OutputFormat::kParquet, schema, {.integer_ids = true});
    // Row widths vary (none, one, many) across more rows than one record batch holds.
    for (int i = 0; i < 70000; ++i) {
      auto& idx = indices.emplace_back();
      auto& val = values.emplace_back();
      for (int k = 0; k < i % 7; ++k) {
        idx.push_back(k * 1000 + i % 13);
        val.push_back(0.5 + k + 1.0 / (i + 1));
      }
      writer->add_sparse(std::to_string(i), false, idx, val);
    }
    writer->commit();
  }
  auto table = testing::read_parquet(path);
  EXPECT_EQ(table->schema()->ToString(),
            "id: int64 not null\nindices: list<element: int32 not null> not null\nvalues: "
            "list<element: float not null> not null");
  auto reader = PredictionReader::open(path, std::nullopt);
  ASSERT_TRUE(reader->schema().sparse);
  PredictionRow row;
  for (int i = 0; i < 70000; ++i) {
    ASSERT_TRUE(reader->next(row));
    ASSERT_EQ(row.id, std::to_string(i));
    ASSERT_EQ(std::vector<std::int32_t>(row.indices.begin(), row.indices.end()), indices[i]);
    ASSERT_EQ(row.values.size(), values[i].size());
    for (std::size_t k = 0; k < values[i].size(); ++k)
      ASSERT_EQ(row.values[k], static_cast<float>(values[i][k]));
  }
  EXPECT_FALSE(reader->next(row));
}

TEST(ParquetTables, MalformedSparseTablesNamedByRowAndColumn) {
  const fs::path dir = testing::scratch_dir("pq_sparse_bad");
  auto ints = [](std::vector<std::int64_t> v) { return testing::int64_array(v); };
  auto read_all = [](const fs::path& path) {
    return error_of([&] {
      auto reader = PredictionReader::open(path, std::nullopt);
      PredictionRow row;
      while (reader->next(row)) {
      }
    });
  };
  const std::pair<std::vector<std::int64_t>, std::string> cases[] = {
      {{1, 5, 3}, "row 2: indices[1]: 3 after 5: indices must ascend"},
      {{1, -2, 3}, "row 2: indices[0]: -2 is not in [0, 2147483647]"},
      {{1, 4, 2147483648}, "row 2: indices[1]: 2147483648 is not in [0, 2147483647]"},
  };
  for (const auto& [flat, want] : cases) {
    testing::write_parquet(dir / "bad.parquet",
                           {{"id", testing::text_array({"a", "b"})},
                            {"indices", list_array({0, 1, 3}, ints(flat))},
                            {"values", list_array({0, 1, 3}, testing::float_array({1, 2, 3}))}});
    EXPECT_EQ(read_all(dir / "bad.parquet"), (dir / "bad.parquet").string() + ": " + want);
  }
  testing::write_parquet(dir / "lengths.parquet",
                         {{"id", testing::text_array({"a"})},
                          {"indices", list_array({0, 2}, ints({1, 2}))},
                          {"values", list_array({0, 1}, testing::float_array({1}))}});
  EXPECT_NE(read_all(dir / "lengths.parquet")
                .find("row 1: 'indices' has 2 items and 'values' 1: one value per index"),
            std::string::npos);
  testing::write_parquet(dir / "nan.parquet",
                         {{"id", testing::text_array({"a"})},
                          {"indices", list_array({0, 1}, ints({1}))},
                          {"values", list_array({0, 1}, testing::float_array({NAN}))}});
  EXPECT_NE(read_all(dir / "nan.parquet").find("row 1: values[0]: nan is not a finite number"),
            std::string::npos);
  testing::write_parquet(dir / "extra.parquet",
                         {{"id", testing::text_array({"a"})},
                          {"indices", list_array({0, 1}, ints({1}))},
                          {"values", list_array({0, 1}, testing::float_array({1}))},
                          {"e", testing::float_array({1})}});
  EXPECT_NE(read_all(dir / "extra.parquet")
                .find("column 'e': a sparse table has the columns id, indices and values only"),
            std::string::npos);
  testing::write_parquet(dir / "novalues.parquet", {{"id", testing::text_array({"a"})},
                                                    {"indices", list_array({0, 1}, ints({1}))}});
  EXPECT_NE(read_all(dir / "novalues.parquet").find("no column 'values'"), std::string::npos);
}

TEST(ParquetLibrary, NamesArrow) { EXPECT_EQ(parquet_library().rfind("Arrow ", 0), 0u); }

}  // namespace
}  // namespace mcinfer::data
