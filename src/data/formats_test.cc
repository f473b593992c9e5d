// The table of output formats (formats.h): what each holds, where shards go, and the refusals
// it gives — CSV for sparse rows, Parquet in a build without Arrow (asked here of either build
// through check_table_format's have_arrow) — and sparse JSONL rows written and read back.
#include "data/formats.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "data/prediction_reader.h"
#include "data/predictions.h"

namespace mcinfer::data {
namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(FormatTable, OneEntryPerFormatInOrder) {
  const auto table = output_format_table();
  ASSERT_EQ(table.size(), kOutputFormatNames.entries.size());
  for (std::size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(table[i].format, kOutputFormatNames.entries[i].first);
    EXPECT_FALSE(table[i].extensions.empty());
    EXPECT_NE(table[i].open_reader, nullptr);
    EXPECT_NE(table[i].open_writer, nullptr);
    for (std::string_view ext : table[i].extensions)
      EXPECT_EQ(format_of_extension(std::string("x") + std::string(ext)), table[i].format);
  }
  EXPECT_FALSE(format_info(OutputFormat::kCsv).holds(RowKind::kSparse));
  EXPECT_TRUE(format_info(OutputFormat::kJsonl).holds(RowKind::kSparse));
  EXPECT_TRUE(format_info(OutputFormat::kParquet).holds(RowKind::kSparse));
}

TEST(FormatTable, CsvRefusesSparseRowsNamingJsonlAndParquet) {
  for (bool arrow : {true, false}) {
    EXPECT_THROW(check_table_format("o.csv", OutputFormat::kCsv, RowKind::kSparse, arrow),
                 UsageError);
    const std::string m = message_of(
        [&] { check_table_format("o.csv", OutputFormat::kCsv, RowKind::kSparse, arrow); });
    EXPECT_NE(m.find("o.csv: CSV cannot hold sparse rows"), std::string::npos) << m;
    EXPECT_NE(m.find("JSONL (.jsonl) or Parquet (.parquet)"), std::string::npos) << m;
  }
  EXPECT_NO_THROW(check_table_format("o.csv", OutputFormat::kCsv, RowKind::kEmbedding, false));
  EXPECT_NO_THROW(check_table_format("o.jsonl", OutputFormat::kJsonl, RowKind::kSparse, false));
}

TEST(FormatTable, ParquetWithoutArrowRefusedNamingWhatThisBuildWrites) {
  EXPECT_NO_THROW(check_table_format("o.pq", OutputFormat::kParquet, RowKind::kSparse, true));
  std::string m = message_of(
      [&] { check_table_format("o.pq", OutputFormat::kParquet, RowKind::kSparse, false); });
  EXPECT_NE(m.find("o.pq: this mcinfer was built without Parquet support"), std::string::npos) << m;
  EXPECT_NE(m.find("-DMCINFER_ARROW=ON"), std::string::npos) << m;
  EXPECT_NE(m.find("or write JSONL (.jsonl)"), std::string::npos) << m;  // CSV holds no sparse
  EXPECT_EQ(m.find("CSV"), std::string::npos) << m;
  m = message_of(
      [&] { check_table_format("o.pq", OutputFormat::kParquet, RowKind::kColumns, false); });
  EXPECT_NE(m.find("CSV (.csv) or JSONL (.jsonl)"), std::string::npos) << m;
  m = message_of([&] { check_table_format("o.pq", OutputFormat::kParquet, std::nullopt, false); });
  EXPECT_NE(m.find("without Parquet support"), std::string::npos) << m;
}

TEST(FormatTable, ShardsHoldEveryKindInLines) {
  for (const OutputFormatInfo& info : output_format_table()) {
    for (RowKind kind :
         {RowKind::kColumns, RowKind::kEmbedding, RowKind::kGroups, RowKind::kSparse}) {
      const LineFormat lines = shard_format(info.format, kind);
      EXPECT_TRUE(format_info(*format_of_extension(lines == LineFormat::kCsv ? "s.csv" : "s.jsonl"))
                      .holds(kind));
    }
  }
}

struct SparseTable {
  std::vector<std::string> ids;
  std::vector<std::vector<std::int32_t>> indices;
  std::vector<std::vector<double>> values;
};

SparseTable read_sparse(std::string_view bytes) {
  auto reader = PredictionReader::open_bytes(bytes, "s.jsonl", LineFormat::kJsonl);
  EXPECT_TRUE(reader->has_schema());
  EXPECT_TRUE(reader->schema().sparse);
  EXPECT_TRUE(reader->schema().columns.empty());
  SparseTable t;
  PredictionRow row;
  while (reader->next(row)) {
    t.ids.emplace_back(row.id);
    t.indices.emplace_back(row.indices.begin(), row.indices.end());
    t.values.emplace_back(row.values.begin(), row.values.end());
  }
  return t;
}

TEST(SparseJsonl, WrittenRowsReadBack) {
  std::string bytes;
  const std::vector<std::int32_t> a = {3, 17, 2147483647};
  const std::vector<double> av = {0.25, 1.5, 1e-3};
  append_sparse_prediction("q\"1", true, a, av, bytes);
  append_sparse_prediction("7", false, {}, {}, bytes);
  EXPECT_EQ(bytes,
            "{\"id\":\"q\\\"1\",\"indices\":[3,17,2147483647],\"values\":[0.25,1.5,0.001]}\n"
            "{\"id\":7,\"indices\":[],\"values\":[]}\n");
  // Keys in any order, as another tool may write them. (Values are written as float32 in their
  // shortest form, which reads back as that decimal.)
  bytes += "{\"values\":[2],\"id\":\"x\",\"indices\":[0]}\n";
  const SparseTable t = read_sparse(bytes);
  EXPECT_EQ(t.ids, (std::vector<std::string>{"q\"1", "7", "x"}));
  EXPECT_EQ(t.indices[0], a);
  EXPECT_EQ(t.values[0], (std::vector<double>{0.25, 1.5, 0.001}));
  EXPECT_TRUE(t.indices[1].empty());
  EXPECT_EQ(t.indices[2], (std::vector<std::int32_t>{0}));
  EXPECT_EQ(t.values[2], (std::vector<double>{2}));
}

TEST(SparseJsonl, MalformedRowsNamedByLineAndField) {
  const std::string first = "{\"id\":1,\"indices\":[1,2],\"values\":[1,2]}\n";
  const std::pair<std::string, std::string> cases[] = {
      {"{\"id\":2,\"indices\":[2,1],\"values\":[1,2]}", "s.jsonl:2: field 'indices'[1]: 1 after 2"},
      {"{\"id\":2,\"indices\":[1,1],\"values\":[1,2]}", "indices must ascend"},
      {"{\"id\":2,\"indices\":[-1],\"values\":[1]}", "field 'indices'[0]: -1 is not an integer"},
      {"{\"id\":2,\"indices\":[1.5],\"values\":[1]}", "field 'indices'[0]: 1.5 is not an integer"},
      {"{\"id\":2,\"indices\":[2147483648],\"values\":[1]}", "not an integer in [0, 2147483647]"},
      {"{\"id\":2,\"indices\":[1,2],\"values\":[1]}", "'indices' has 2 items and 'values' 1"},
      {"{\"id\":2,\"indices\":[1],\"values\":[null]}", "column 'values[0]': null"},
      {"{\"id\":2,\"indices\":[1]}", "missing field 'values'"},
      {"{\"id\":2,\"indices\":[1],\"values\":[1],\"e\":1}", "unexpected field 'e'"},
      {"{\"id\":2,\"indices\":[1],\"values\":[1],\"indices\":[1]}",
       "field 'indices' appears twice"},
  };
  for (const auto& [line, want] : cases) {
    const std::string bytes = first + line + "\n";
    const std::string m = message_of([&] { read_sparse(bytes); });
    EXPECT_NE(m.find(want), std::string::npos) << line << " -> " << m;
    EXPECT_NE(m.find("s.jsonl:2:"), std::string::npos) << m;
  }
  // A first row with the sparse fields and others is neither kind.
  const std::string m = message_of(
      [&] { read_sparse("{\"id\":1,\"indices\":[1],\"values\":[1],\"embedding\":[1]}\n"); });
  EXPECT_NE(m.find("s.jsonl:1: a sparse row has exactly the fields id, indices and values"),
            std::string::npos)
      << m;
}

}  // namespace
}  // namespace mcinfer::data
