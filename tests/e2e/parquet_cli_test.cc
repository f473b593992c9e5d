// Parquet through the CLI (builds with Arrow): `run --input x.parquet --output y.parquet` gives
// exactly the numbers the CSV path gives for the same rows, under both schedules, several
// replicas, ranks merged by `merge --shards-dir`, and after a kill -9 and --resume; an
// embedding is written as a fixed_size_list column.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>

#include "core/json.h"
#include "data/predictions.h"
#include "data/rows.h"
#include "support/cli.h"
#include "support/parquet.h"
#include "support/predictions.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

// One text fixture's rows, `copies` times over (ids made distinct), as CSV and as Parquet (id:
// string or int64; text: large_string; pair: dictionary).
struct Inputs {
  fs::path dir, model, csv, parquet;
  std::vector<std::string> flags;  // the fixture's own run flags
};

Inputs make_inputs(const std::string& fixture, const std::string& name, int copies,
                   bool integer_ids = false) {
  Inputs in;
  in.model = testing::fixture("text/" + fixture);
  in.dir = testing::scratch_dir("pq_cli_" + name);
  const Json reference = read_json_file(in.model / "reference.json");  // outlives the loop
  for (const auto& flag : reference["flags"]) in.flags.push_back(flag.get<std::string>());
  data::ColumnSpec columns;
  const bool pairs = fixture == "bert_cls";
  if (pairs) columns.text_pair_col = "text_b";
  std::vector<data::Row> rows;
  auto reader = data::RowReader::open(in.model / "input.csv", data::InputFormat::kCsv, columns);
  data::Row row;
  data::BadRow bad;
  while (reader->next(row, bad) == data::RowReader::Result::kRow) rows.push_back(row);
  testing::Texts ids, texts, seconds;
  std::vector<std::int64_t> numbers;
  std::string csv = pairs ? "id,text,text_b\n" : "id,text\n";
  for (int k = 0; k < copies; ++k) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto number = static_cast<std::int64_t>(k * 1000 + i);
      const std::string id =
          integer_ids ? std::to_string(number) : rows[i].id.text + "_" + std::to_string(k);
      ids.push_back(id);
      numbers.push_back(number);
      texts.push_back(rows[i].text);
      data::append_csv_field(id, csv);
      csv += ',';
      data::append_csv_field(rows[i].text, csv);
      if (pairs) {
        seconds.push_back(*rows[i].text_pair);
        csv += ',';
        data::append_csv_field(*rows[i].text_pair, csv);
      }
      csv += '\n';
    }
  }
  in.csv = in.dir / "in.csv";
  std::ofstream(in.csv, std::ios::binary) << csv;
  std::vector<testing::NamedColumn> table = {
      {"id", integer_ids ? testing::int64_array(numbers) : testing::text_array(ids)},
      {"text", testing::text_array(texts, testing::TextKind::kLargeString)}};
  if (pairs)
    table.push_back({"text_b", testing::text_array(seconds, testing::TextKind::kDictionary)});
  in.parquet = in.dir / "in.parquet";
  testing::write_parquet(in.parquet, table, 70);  // several row groups
  return in;
}

std::vector<std::string> run_args(const Inputs& in, const fs::path& input, const fs::path& output,
                                  std::vector<std::string> extra) {
  std::vector<std::string> a = {
      "run",           in.model.string(), "--input", input.string(),   "--output",
      output.string(), "--precision",     "fp32",    "--batch-tokens", "512",
      "--quiet"};
  a.insert(a.end(), in.flags.begin(), in.flags.end());
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// `got` holds the same ids and, as float32, exactly the CSV path's values.
void expect_same_numbers(const fs::path& got_path, const testing::Table& want,
                         const std::string& what) {
  ASSERT_TRUE(fs::exists(got_path)) << what;
  const auto got = testing::read_table(got_path);
  ASSERT_EQ(got.ids, want.ids) << what;
  ASSERT_EQ(got.columns, want.columns) << what;
  for (std::size_t i = 0; i < got.values.size(); ++i)
    for (std::size_t j = 0; j < got.values[i].size(); ++j)
      ASSERT_EQ(static_cast<float>(got.values[i][j]), static_cast<float>(want.values[i][j]))
          << what << ": row " << i << " column " << j;
}

testing::Table csv_reference(const Inputs& in) {
  const fs::path out = in.dir / "reference.csv";
  auto r = run_cli(run_args(in, in.csv, out, {"--replicas", "2"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return testing::read_table(out);
}

TEST(ParquetCli, RunMatchesTheCsvPathInEverySchedule) {
  const Inputs in = make_inputs("bert_cls", "pairs", 4);
  const auto want = csv_reference(in);
  ASSERT_EQ(want.ids.size(), 156u);  // 4 × the fixture's 39 good rows (its t11 is bad)
  for (const char* schedule : {"dynamic", "static"}) {
    const fs::path out = in.dir / fmt::format("out_{}.parquet", schedule);
    auto r = run_cli(run_args(in, in.parquet, out, {"--schedule", schedule, "--replicas", "3"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_same_numbers(out, want, schedule);
    const auto table = testing::read_parquet(out);
    EXPECT_EQ(table->schema()->field(0)->type()->id(), arrow::Type::STRING);
  }
  // Parquet in, CSV out: byte for byte the CSV path's file. --format names a Parquet input
  // whatever its extension.
  const fs::path renamed = in.dir / "in.data";
  fs::copy_file(in.parquet, renamed);
  auto r = run_cli(run_args(in, renamed, in.dir / "out.csv", {"--format", "parquet"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(testing::read_file(in.dir / "out.csv"), testing::read_file(in.dir / "reference.csv"));
  // A CSV file said to be Parquet is refused by name.
  r = run_cli(run_args(in, in.csv, in.dir / "x.parquet", {"--format", "parquet"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("in.csv: not a Parquet file"), std::string::npos) << r.err;
}

TEST(ParquetCli, EmbeddingsAreAFixedSizeListWithIntegerIds) {
  const Inputs in = make_inputs("xlmr_embed", "embed", 2, true);
  const auto want = csv_reference(in);
  const fs::path out = in.dir / "out.pq";
  auto r = run_cli(run_args(in, in.parquet, out, {"--replicas", "2"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_same_numbers(out, want, "embedding");
  const auto table = testing::read_parquet(out);
  ASSERT_EQ(table->num_columns(), 2);
  EXPECT_EQ(table->schema()->field(0)->type()->id(), arrow::Type::INT64);
  EXPECT_EQ(table->schema()->field(1)->name(), "embedding");
  const auto& type = *table->schema()->field(1)->type();
  ASSERT_EQ(type.id(), arrow::Type::FIXED_SIZE_LIST) << type.ToString();
  const auto& list = static_cast<const arrow::FixedSizeListType&>(type);
  EXPECT_EQ(static_cast<std::size_t>(list.list_size()), want.columns.size());
  EXPECT_EQ(list.value_type()->id(), arrow::Type::FLOAT) << type.ToString();
}

TEST(ParquetCli, RanksMergedFromTheShardsDirectory) {
  const Inputs in = make_inputs("bert_cls", "ranks", 3);
  const auto want = csv_reference(in);
  for (const char* schedule : {"static", "dynamic"}) {
    const fs::path shards = in.dir / fmt::format("shards_{}", schedule);
    for (int rank = 0; rank < 2; ++rank) {
      auto r = run_cli(run_args(in, in.parquet, in.dir / "unused.parquet",
                                {"--schedule", schedule, "--replicas", "2", "--shards-dir",
                                 shards.string(), "--rank", std::to_string(rank), "--world", "2"}));
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    const fs::path merged = in.dir / fmt::format("merged_{}.parquet", schedule);
    auto r = run_cli({"merge", "--shards-dir", shards.string(), "--expect", in.parquet.string(),
                      "--output", merged.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_same_numbers(merged, want, schedule);
  }
}

TEST(ParquetCli, KilledThenResumedGivesTheUninterruptedOutput) {
  const Inputs in = make_inputs("bert_cls", "resume", 4);
  const auto want = csv_reference(in);
  // Killed (SIGKILL) mid-run, and while the output itself is committed (the run's second
  // atomic commit: run.json is the first).
  for (const char* fault : {"shard-write:3", "atomic-commit:2"}) {
    const fs::path out = in.dir / "out.parquet";
    const fs::path shards = in.dir / fmt::format("shards_{}", fault[0]);
    const auto args =
        run_args(in, in.parquet, out, {"--replicas", "3", "--shards-dir", shards.string()});
    testing::CliOptions crash;
    crash.env = {fmt::format("MCINFER_FAULT={}", fault)};
    EXPECT_EQ(run_cli(args, crash).exit_code, 137) << fault;
    EXPECT_FALSE(fs::exists(out)) << fault << ": no partial output";
    auto resumed = args;
    resumed.push_back("--resume");
    auto r = run_cli(resumed);
    ASSERT_EQ(r.exit_code, 0) << fault << ": " << r.err;
    expect_same_numbers(out, want, fault);
    fs::remove(out);
  }
}

}  // namespace
}  // namespace mcinfer
