// Sparse rows (--task sparse) in every format and through shards, merge and --resume
// (tests/fixtures/sparse, tools/gen_sparse_fixtures.py): Parquet outputs equal
// SparseEncoder(dir).encode(texts) as the JSONL ones do; the shards hold sparse JSONL rows, not
// vocabulary-wide dense ones; an id's rows (duplicate input ids, `mcinfer merge` of two runs)
// are averaged as pandas' groupby(id).mean() of the dense vectors, computed here from the
// reference; a run killed (SIGKILL) mid-shard and resumed gives the reference. Every output is
// read back densely through data::PredictionReader and compared, index by index, with the
// reference's dense rows: exactly the reference's nonzero set, values within kTolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>

#include "data/formats.h"
#include "data/prediction_reader.h"
#include "data/predictions.h"
#include "data/row_readers.h"
#include "data/rows.h"
#include "support/cli.h"
#include "support/reference.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

// As sparse_cli_test: fp32 against encode() (relative above 1, for sum pooling's sums).
constexpr double kTolerance = 1e-5;

fs::path sparse(const std::string& name) { return testing::fixture("sparse/" + name); }

// Dense rows by id, in file order.
struct DenseRows {
  std::vector<std::string> ids;
  std::vector<std::vector<double>> rows;
};

// An output read back through the table readers (JSONL or Parquet by extension), each sparse row
// made dense over `vocab`.
DenseRows read_sparse_output(const fs::path& path, std::int64_t vocab) {
  auto reader = data::PredictionReader::open(path, std::nullopt);
  EXPECT_TRUE(reader->has_schema() && reader->schema().sparse) << path;
  DenseRows out;
  data::PredictionRow row;
  while (reader->next(row)) {
    out.ids.emplace_back(row.id);
    std::vector<double>& dense = out.rows.emplace_back(static_cast<std::size_t>(vocab), 0.0);
    for (std::size_t k = 0; k < row.indices.size(); ++k) {
      EXPECT_LT(row.indices[k], vocab) << path;
      if (row.indices[k] < vocab) dense[static_cast<std::size_t>(row.indices[k])] = row.values[k];
    }
  }
  return out;
}

// The reference's rows as dense doubles.
std::vector<std::vector<double>> reference_rows(const fs::path& dir, const std::string& name,
                                                std::int64_t& vocab) {
  const testing::Reference ref(dir / "reference.safetensors");
  const auto values = ref.floats(name);
  vocab = ref.shape(name)[1];
  std::vector<std::vector<double>> rows;
  for (std::size_t at = 0; at < values.size(); at += static_cast<std::size_t>(vocab))
    rows.emplace_back(values.begin() + static_cast<std::ptrdiff_t>(at),
                      values.begin() + static_cast<std::ptrdiff_t>(at + vocab));
  return rows;
}

void expect_rows_equal(const DenseRows& got, const std::vector<std::string>& want_ids,
                       const std::vector<std::vector<double>>& want, const std::string& what) {
  ASSERT_EQ(got.ids, want_ids) << what;
  double worst = 0;
  for (std::size_t r = 0; r < want.size(); ++r) {
    for (std::size_t v = 0; v < want[r].size(); ++v) {
      // The nonzero set exactly: a weight the reference has is never dropped, and none added.
      ASSERT_EQ(got.rows[r][v] != 0.0, want[r][v] != 0.0)
          << what << ": row " << got.ids[r] << " index " << v << ": " << got.rows[r][v] << " vs "
          << want[r][v];
      worst = std::max(worst,
                       std::abs(got.rows[r][v] - want[r][v]) / std::max(1.0, std::abs(want[r][v])));
    }
  }
  EXPECT_LE(worst, kTolerance) << what;
}

std::vector<std::string> fixture_ids(std::size_t n) {
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < n; ++i) ids.push_back(fmt::format("t{:02d}", i));
  return ids;
}

testing::CliResult run_sparse(const fs::path& dir, const fs::path& input, const fs::path& output,
                              std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"run",          dir.string(), "--input",
                                input.string(), "--output",   output.string(),
                                "--precision",  "fp32",       "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return run_cli(a);
}

// The fixture's texts as JSONL rows whose ids are `id_of(i)` (duplicates allowed).
fs::path input_with_ids(const fs::path& dir, const fs::path& path,
                        const std::function<std::string(std::size_t)>& id_of) {
  data::ColumnSpec columns;
  columns.id_col = "id";
  columns.text_col = "text";
  auto reader = data::RowReader::open(dir / "input.csv", data::InputFormat::kCsv, columns);
  std::ofstream out(path);
  data::Row row;
  data::BadRow bad;
  for (std::size_t i = 0; reader->next(row, bad) == data::RowReader::Result::kRow; ++i) {
    std::string line = "{\"id\":";
    data::append_json_string(id_of(i), line);
    line += ",\"text\":";
    data::append_json_string(row.text, line);
    out << line << "}\n";
  }
  return path;
}

// The formats this build writes sparse rows in (Parquet where Arrow is linked).
std::vector<std::string> sparse_extensions() {
  if (data::parquet_available()) return {".jsonl", ".parquet"};
  return {".jsonl"};
}

class SparseFormats : public ::testing::TestWithParam<std::string> {};

// Parquet, default flags and --sparse-top-k 5: encode() and encode(max_active_dims=5).
TEST_P(SparseFormats, ParquetEqualsEncode) {
  const fs::path dir = sparse(GetParam());
  const auto scratch = testing::scratch_dir("sparse_formats_pq_" + GetParam());
  if (!data::parquet_available()) {
    // Refused before any row is computed, naming what this build can write instead.
    auto r = run_sparse(dir, dir / "input.csv", scratch / "o.parquet");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("built without Parquet support"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("JSONL (.jsonl)"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(scratch / "o.parquet"));
    return;
  }
  for (const auto& [name, extra] : {std::pair<std::string, std::vector<std::string>>{"dense", {}},
                                    {"top5", {"--sparse-top-k", "5"}}}) {
    std::int64_t vocab = 0;
    const auto want = reference_rows(dir, name, vocab);
    const fs::path out = scratch / (name + ".parquet");
    auto r = run_sparse(dir, dir / "input.csv", out, extra);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_rows_equal(read_sparse_output(out, vocab), fixture_ids(want.size()), want,
                      GetParam() + " " + name);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SparseFormats,
                         ::testing::Values("sparse6_bert_max_log1p", "sparse6_bert_sum_relu",
                                           "sparse6_bert_max_active8"));

// A format that cannot hold sparse rows (CSV), or that this build cannot write (Parquet without
// Arrow), is refused before the weights are read (they are broken here), so before any row.
TEST(SparseRefusals, FormatsRefusedBeforeTheWeightsAreRead) {
  const auto scratch = testing::scratch_dir("sparse_refusals");
  const fs::path model = scratch / "model";
  fs::remove_all(model);
  fs::copy(sparse("sparse6_bert_max_log1p"), model, fs::copy_options::recursive);
  std::ofstream(model / "model.safetensors", std::ios::trunc) << "not safetensors";
  std::vector<std::pair<std::string, std::string>> cases = {
      {".csv", "CSV cannot hold sparse rows; write JSONL (.jsonl) or Parquet (.parquet)"}};
  if (!data::parquet_available())
    cases.emplace_back(".parquet", "this mcinfer was built without Parquet support");
  for (const auto& [ext, message] : cases) {
    const fs::path out = scratch / ("o" + ext);
    auto r = run_sparse(model, model / "input.csv", out);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("safetensors"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
  }
  // With an output the build writes, the broken weights are what fails.
  auto r = run_sparse(model, model / "input.csv", scratch / "o.jsonl");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("model.safetensors"), std::string::npos) << r.err;
}

// The shards a sparse run keeps hold sparse JSONL rows, whatever the output's format: a
// Parquet run's shards are not CSV rows of the 162-word vocabulary.
TEST(SparseShards, HoldSparseRows) {
  const fs::path dir = sparse("sparse6_bert_max_active8");
  const auto scratch = testing::scratch_dir("sparse_shards_rows");
  fs::remove_all(scratch / "shards");
  auto r = run_sparse(dir, dir / "input.csv", scratch / ("o" + sparse_extensions().back()),
                      {"--shards-dir", (scratch / "shards").string(), "--replicas", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::size_t rows = 0;
  for (const auto& entry : fs::directory_iterator(scratch / "shards")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("shard_", 0) != 0 || entry.path().extension() != ".jsonl") continue;
    auto reader = data::PredictionReader::open(entry.path(), std::nullopt);
    if (!reader->has_schema()) continue;
    EXPECT_TRUE(reader->schema().sparse) << name;
    data::PredictionRow row;
    while (reader->next(row)) {
      ++rows;
      EXPECT_LE(row.indices.size(), 8u) << name;  // max_active_dims 8
    }
  }
  EXPECT_EQ(rows, 14u);
}

// Input ids g0..g4 repeated: each id's output row is the mean of its rows' dense vectors
// (groupby("id").mean(), a missing index counting as 0), in JSONL and Parquet.
TEST(SparseMerge, DuplicateIdsAreTheDenseGroupbyMean) {
  const fs::path dir = sparse("sparse6_bert_max_log1p");
  const auto scratch = testing::scratch_dir("sparse_merge_dup");
  const auto group = [](std::size_t i) { return fmt::format("g{}", i % 5); };
  const fs::path input = input_with_ids(dir, scratch / "dup.jsonl", group);
  std::int64_t vocab = 0;
  const auto rows = reference_rows(dir, "dense", vocab);
  std::vector<std::string> ids;
  std::vector<std::vector<double>> want(5, std::vector<double>(static_cast<std::size_t>(vocab)));
  std::vector<int> counts(5, 0);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (std::size_t v = 0; v < rows[i].size(); ++v) want[i % 5][v] += rows[i][v];
    ++counts[i % 5];
  }
  for (std::size_t g = 0; g < 5; ++g) {
    ids.push_back(group(g));
    for (double& x : want[g]) x /= counts[g];
  }
  for (const std::string& ext : sparse_extensions()) {
    const fs::path out = scratch / ("o" + ext);
    auto r = run_sparse(dir, input, out, {"--replicas", "2", "--batch-size", "3"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_rows_equal(read_sparse_output(out, vocab), ids, want, ext);
  }
}

// `mcinfer merge` of a full run (JSONL) and a top-5 run (Parquet) of the same ids: per id the
// weighted mean over the union of the indices, those only the full run has counting 0 in the
// top-5 one.
TEST(SparseMerge, MergeCommandAveragesOverTheUnionOfIndices) {
  const fs::path dir = sparse("sparse6_bert_max_log1p");
  const auto scratch = testing::scratch_dir("sparse_merge_cmd");
  ASSERT_EQ(run_sparse(dir, dir / "input.csv", scratch / "full.jsonl").exit_code, 0);
  const fs::path top5_out = scratch / ("top5" + sparse_extensions().back());
  ASSERT_EQ(run_sparse(dir, dir / "input.csv", top5_out, {"--sparse-top-k", "5"}).exit_code, 0);
  std::int64_t vocab = 0;
  const auto full = reference_rows(dir, "dense", vocab);
  const auto top5 = reference_rows(dir, "top5", vocab);
  std::vector<std::vector<double>> want = full;
  for (std::size_t r = 0; r < want.size(); ++r)
    for (std::size_t v = 0; v < want[r].size(); ++v)
      want[r][v] = (1 * full[r][v] + 3 * top5[r][v]) / 4;
  for (const std::string& ext : sparse_extensions()) {
    const fs::path out = scratch / ("merged" + ext);
    auto r = run_cli({"merge", (scratch / "full.jsonl").string(), top5_out.string(), "--weights",
                      "1", "3", "--output", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_rows_equal(read_sparse_output(out, vocab), fixture_ids(want.size()), want, ext);
  }
  // A sparse table merges only with sparse tables.
  const fs::path dense = scratch / "dense.jsonl";
  std::ofstream(dense) << "{\"id\":\"t00\",\"embedding\":[1,2]}\n";
  auto r = run_cli({"merge", (scratch / "full.jsonl").string(), dense.string(), "--output",
                    (scratch / "mixed.jsonl").string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("sparse rows (indices, values) merge only with sparse rows"),
            std::string::npos)
      << r.err;
  // CSV cannot hold the merged sparse rows; the refusal names the formats that can.
  r = run_cli(
      {"merge", (scratch / "full.jsonl").string(), "--output", (scratch / "merged.csv").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("JSONL (.jsonl) or Parquet (.parquet)"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(scratch / "merged.csv"));
}

// Killed (SIGKILL) in the middle of a shard write, then --resume: the reference, every id once;
// the resumed shards are sparse rows appended after the kept ones.
TEST(SparseResume, KilledMidShardThenResumedGivesEncode) {
  const fs::path dir = sparse("sparse6_bert_sum_relu");
  const auto scratch = testing::scratch_dir("sparse_resume");
  std::int64_t vocab = 0;
  const auto want = reference_rows(dir, "dense", vocab);
  for (const std::string& ext : sparse_extensions()) {
    for (const char* at : {"2", "5"}) {
      const fs::path out = scratch / ("o" + ext), shards = scratch / "shards";
      fs::remove(out);
      fs::remove_all(shards);
      std::vector<std::string> a = {"run",
                                    dir.string(),
                                    "--input",
                                    (dir / "input.csv").string(),
                                    "--output",
                                    out.string(),
                                    "--precision",
                                    "fp32",
                                    "--quiet",
                                    "--shards-dir",
                                    shards.string(),
                                    "--replicas",
                                    "2",
                                    "--batch-size",
                                    "2",
                                    "--schedule",
                                    "static"};
      testing::CliOptions crash;
      crash.env = {std::string("MCINFER_FAULT=shard-write:") + at};
      auto first = run_cli(a, crash);
      ASSERT_EQ(first.exit_code, 128 + 9) << first.err;
      ASSERT_FALSE(fs::exists(out));
      a.push_back("--resume");
      auto resumed = run_cli(a);
      ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
      expect_rows_equal(read_sparse_output(out, vocab), fixture_ids(want.size()), want,
                        ext + " killed at write " + at);
    }
  }
}

}  // namespace
}  // namespace mcinfer
