#include "merge/merge.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "core/json.h"
#include "data/prediction_reader.h"
#include "data/predictions.h"
#include "merge/shard_names.h"
#include "support/paths.h"
#include "support/predictions.h"

namespace mcinfer::merge {
namespace {

namespace fs = std::filesystem;

using testing::read_table;
using testing::Table;

// Ids and order exactly; values within a relative 1e-12 of pandas'.
void expect_same_table(const fs::path& got_path, const fs::path& want_path) {
  Table got = read_table(got_path), want = read_table(want_path);
  EXPECT_FALSE(got.warning.has_value()) << got_path;
  ASSERT_EQ(got.columns, want.columns) << want_path;
  ASSERT_EQ(got.ids, want.ids) << want_path;
  for (std::size_t r = 0; r < got.ids.size(); ++r) {
    for (std::size_t c = 0; c < got.columns.size(); ++c) {
      double a = got.values[r][c], b = want.values[r][c];
      ASSERT_LE(std::abs(a - b), 1e-12 * std::max(std::abs(a), std::abs(b)))
          << want_path << " id " << got.ids[r] << " column " << got.columns[c] << ": " << a
          << " vs " << b;
    }
  }
}

std::vector<fs::path> expand(const fs::path& dir, const std::vector<std::string>& names) {
  std::vector<fs::path> out;
  for (const auto& n : names) {
    fs::path p = dir / n;
    if (fs::is_directory(p)) {
      for (auto& s : shard_files(p)) out.push_back(s);
    } else {
      out.push_back(p);
    }
  }
  return out;
}

Reduce reduce_of(const std::string& s) {
  if (s == "median") return Reduce::kMedian;
  if (s == "max") return Reduce::kMax;
  if (s == "min") return Reduce::kMin;
  if (s == "first") return Reduce::kFirst;
  return Reduce::kMean;
}

void check_run(const fs::path& dir, const Json& run);

// Reference: tools/gen_merge_fixtures.py, where pandas computes every expected table.
TEST(Merge, MatchesPandasFixtures) {
  fs::path root = testing::fixture("merge");
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(root)) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  ASSERT_GE(cases.size(), 10u);
  std::size_t runs = 0;
  for (const fs::path& dir : cases) {
    Json spec = read_json_file(dir / "case.json");
    for (const Json& run : spec["runs"]) {
      SCOPED_TRACE(dir.filename().string() + " " + run.dump());
      ++runs;
      try {
        check_run(dir, run);
      } catch (const Json::exception& e) {
        ADD_FAILURE() << "bad case.json: " << e.what();
      }
    }
  }
  EXPECT_GE(runs, 20u);
}

void check_run(const fs::path& dir, const Json& run) {
  {
    {
      fs::path scratch = testing::scratch_dir("merge_fixture");
      fs::path out = scratch / run["output"].get<std::string>();
      Options options;
      options.reduce = reduce_of(run.value("reduce", "mean"));
      options.weights = run.value("weights", std::vector<double>{});
      if (run.contains("expect")) {
        ExpectInput e;
        e.path = dir / run["expect"].get<std::string>();
        e.format = data::resolve_input_format(e.path, std::nullopt);
        e.columns = ExpectInput::ids_only(run.value("id_col", "id"));
        options.expect_input = e;
        options.order = Order::kInput;
      }
      std::string order = run.value("order", "");
      if (order == "id") options.order = Order::kId;
      if (order == "first-seen") options.order = Order::kFirstSeen;
      options.allow_missing = run.value("allow_missing", false);
      int exit = run["exit"];
      auto inputs = expand(dir, run["inputs"].get<std::vector<std::string>>());

      Report report;
      std::string error;
      int got_exit = 0;
      try {
        report = merge_files(inputs, out, options);
      } catch (const MissingIdsError& e) {
        got_exit = 3;
        report = e.report();
        error = e.what();
      } catch (const Error& e) {
        got_exit = 1;
        error = e.what();
      }
      ASSERT_EQ(got_exit, exit) << error;
      for (const auto& s : run.value("error_contains", std::vector<std::string>{})) {
        EXPECT_NE(error.find(s), std::string::npos) << error << " lacks " << s;
      }
      if (exit != 0) {
        EXPECT_FALSE(fs::exists(out)) << "nothing is written on failure";
      } else {
        expect_same_table(out, dir / run["expected"].get<std::string>());
        std::string text = testing::read_file(out);
        for (const auto& s : run.value("output_contains", std::vector<std::string>{})) {
          EXPECT_NE(text.find(s), std::string::npos) << s;
        }
      }
      for (const auto& s : run.value("warnings_contain", std::vector<std::string>{})) {
        bool found = false;
        for (const auto& w : report.warnings) found = found || w.find(s) != std::string::npos;
        EXPECT_TRUE(found) << s;
      }
      if (run.contains("missing")) {
        EXPECT_EQ(report.missing, run["missing"].get<std::uint64_t>());
        EXPECT_EQ(report.first_missing, run.value("first_missing", std::vector<std::string>{}));
        EXPECT_EQ(report.unexpected, run.value("unexpected", std::uint64_t{0}));
        EXPECT_EQ(report.first_unexpected,
                  run.value("first_unexpected", std::vector<std::string>{}));
      }
      if (exit != 1) {
        EXPECT_EQ(report.duplicate_rows, report.rows_read - report.distinct_ids);
      }
    }
  }
}

fs::path write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(Merge, MissingIdsLeaveAnExistingOutputUntouched) {
  fs::path d = testing::scratch_dir("merge_untouched");
  auto shard = write(d / "s.csv", "id,p\n1,0.5\n");
  auto out = write(d / "out.csv", "previous\n");
  Options options;
  options.expected_ids = std::vector<data::RowId>{{"1", true}, {"2", true}};
  try {
    merge_files({shard}, out, options);
    FAIL() << "expected MissingIdsError";
  } catch (const MissingIdsError& e) {
    EXPECT_EQ(e.report().missing, 1u);
    EXPECT_EQ(e.report().first_missing, std::vector<std::string>{"2"});
  }
  EXPECT_EQ(testing::read_file(out), "previous\n");
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d)) ++files;
  EXPECT_EQ(files, 2u) << "no temporary file left behind";
}

TEST(Merge, InconsistentOptionsAreUsageErrors) {
  fs::path d = testing::scratch_dir("merge_usage");
  auto a = write(d / "a.csv", "id,p\n1,0.5\n");
  auto b = write(d / "b.csv", "id,p\n1,0.7\n");
  Options weights;
  weights.weights = {1.0};
  EXPECT_THROW(merge_files({a, b}, d / "o.csv", weights), UsageError);
  weights.weights = {1.0, -1.0};
  EXPECT_THROW(merge_files({a, b}, d / "o.csv", weights), UsageError);
  weights.weights = {1.0, 2.0};
  weights.reduce = Reduce::kMedian;
  EXPECT_THROW(merge_files({a, b}, d / "o.csv", weights), UsageError);
  Options order;
  order.order = Order::kInput;
  EXPECT_THROW(merge_files({a}, d / "o.csv", order), UsageError);
  EXPECT_THROW(merge_files({a}, a, Options{}), UsageError);            // output is an input
  EXPECT_THROW(merge_files({a}, d / "o.tsv", Options{}), UsageError);  // no such format
  EXPECT_THROW(merge_files({}, d / "o.csv", Options{}), UsageError);
}

TEST(Merge, EmptyShardIsAWarningAllEmptyIsAnError) {
  fs::path d = testing::scratch_dir("merge_empty");
  auto a = write(d / "a.csv", "id,p\n1,0.5\n");
  auto e = write(d / "e.csv", "");
  Report r = merge_files({a, e}, d / "o.csv", Options{});
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("e.csv: empty file"), std::string::npos);
  EXPECT_EQ(testing::read_file(d / "o.csv"), "id,p\n1,0.5\n");
  EXPECT_THROW(merge_files({e}, d / "o2.csv", Options{}), Error);
  EXPECT_FALSE(fs::exists(d / "o2.csv"));
}

TEST(Merge, IdsCompareAsExactStrings) {
  fs::path d = testing::scratch_dir("merge_exact_ids");
  auto a = write(d / "a.csv", "id,p\n5,1\n5.0,2\n 5,3\n");
  auto b = write(d / "b.jsonl", "{\"id\": 5, \"p\": 3}\n{\"id\": \"5.0\", \"p\": 4}\n");
  Report r = merge_files({a, b}, d / "o.csv", Options{});
  EXPECT_EQ(r.distinct_ids, 3u);
  EXPECT_EQ(testing::read_file(d / "o.csv"), "id,p\n5,2\n5.0,3\n\" 5\",3\n");
  // JSONL output keeps each id's first kind: CSV ids are strings, JSON numbers stay numbers.
  merge_files({b, a}, d / "o.jsonl", Options{});
  EXPECT_EQ(testing::read_file(d / "o.jsonl"),
            "{\"id\":5,\"p\":2}\n{\"id\":\"5.0\",\"p\":3}\n{\"id\":\" 5\",\"p\":3}\n");
}

TEST(Merge, ExpectedIdsListMatchesExpectFile) {
  fs::path d = testing::scratch_dir("merge_expect_list");
  auto s = write(d / "s.csv", "id,p\n2,0.5\n0,0.25\n9,1\n");
  auto input = write(d / "in.csv", "text\na\nb\nc\n");  // no id column: row numbers
  Options file;
  file.expect_input = ExpectInput{input, data::InputFormat::kCsv, ExpectInput::ids_only(), false};
  file.order = Order::kInput;
  file.allow_missing = true;
  Report a = merge_files({s}, d / "a.csv", file);
  Options list;
  list.expected_ids = std::vector<data::RowId>{{"0", false}, {"1", false}, {"2", false}};
  list.order = Order::kInput;
  list.allow_missing = true;
  Report b = merge_files({s}, d / "b.csv", list);
  EXPECT_EQ(testing::read_file(d / "a.csv"), "id,p\n0,0.25\n2,0.5\n9,1\n");
  EXPECT_EQ(testing::read_file(d / "a.csv"), testing::read_file(d / "b.csv"));
  EXPECT_EQ(a.missing, 1u);
  EXPECT_EQ(b.missing, 1u);
  EXPECT_EQ(a.first_unexpected, std::vector<std::string>{"9"});
}

TEST(Merge, ExpectFileBadRows) {
  fs::path d = testing::scratch_dir("merge_expect_bad");
  auto s = write(d / "s.csv", "id,p\n1,0.5\n");
  auto input = write(d / "in.csv", "id,text\n1,a\n2,b,c\n");
  Options o;
  o.expect_input = ExpectInput{input, data::InputFormat::kCsv, ExpectInput::ids_only(), false};
  try {
    merge_files({s}, d / "o.csv", o);
    FAIL();
  } catch (const MissingIdsError&) {
    FAIL() << "a bad row must stop before ids are compared";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("in.csv:3: expected 2 fields, got 3"), std::string::npos)
        << e.what();
  }
  o.expect_input->skip_bad_rows = true;
  Report r = merge_files({s}, d / "o.csv", o);
  EXPECT_EQ(r.expected_bad_rows, 1u);
  EXPECT_EQ(r.missing, 0u);
}

// run passes its own columns: a row it skipped (text not a string) is not expected.
TEST(Merge, ExpectWithRunColumnsSkipsWhatRunSkipped) {
  fs::path d = testing::scratch_dir("merge_expect_run_columns");
  auto s = write(d / "s.csv", "id,p\n1,0.5\n");
  auto input = write(d / "in.jsonl", "{\"id\": 1, \"text\": \"a\"}\n{\"id\": 2, \"text\": 7}\n");
  Options o;
  o.expect_input = ExpectInput{input, data::InputFormat::kJsonl, ExpectInput::ids_only(), false};
  EXPECT_THROW(merge_files({s}, d / "o.csv", o), MissingIdsError);  // ids only: 2 is expected
  o.expect_input->columns = data::ColumnSpec{};                     // run's: id + text
  o.expect_input->skip_bad_rows = true;
  Report r = merge_files({s}, d / "o.csv", o);
  EXPECT_EQ(r.missing, 0u);
  EXPECT_EQ(r.expected_bad_rows, 1u);
}

TEST(Merge, OrderIdNumericWithTiesAndMixed) {
  fs::path d = testing::scratch_dir("merge_order_id");
  auto s = write(d / "s.csv", "id,p\n10,1\n007,2\n7,3\n-3,4\n2,5\n-0,6\n0,7\n");
  Options o;
  o.order = Order::kId;
  merge_files({s}, d / "o.csv", o);
  EXPECT_EQ(testing::read_file(d / "o.csv"), "id,p\n-3,4\n-0,6\n0,7\n2,5\n007,2\n7,3\n10,1\n");
  auto m = write(d / "m.csv", "id,p\n10,1\nb,2\n9,3\n");
  merge_files({m}, d / "o2.csv", o);
  EXPECT_EQ(testing::read_file(d / "o2.csv"), "id,p\n10,1\n9,3\nb,2\n");
}

TEST(Merge, ShardFilesInNumericOrder) {
  fs::path d = testing::scratch_dir("merge_shard_files");
  for (const char* n : {"shard_10.csv", "shard_9.csv", "shard_0.jsonl", "shard_3.csv.tmp-12",
                        "shard_x.csv", "other.csv", "shard_2.txt"}) {
    write(d / n, "");
  }
  auto files = shard_files(d);
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0].filename(), "shard_0.jsonl");
  EXPECT_EQ(files[1].filename(), "shard_9.csv");
  EXPECT_EQ(files[2].filename(), "shard_10.csv");
  EXPECT_THROW(shard_files(testing::scratch_dir("merge_no_shards")), Error);
}

TEST(Merge, ShardFilesOfEveryRankByRankThenReplica) {
  fs::path d = testing::scratch_dir("merge_rank_shards");
  for (const char* n :
       {"shard_1_10.csv", "shard_1_2.csv", "shard_0_3.csv", "shard_10_0.csv", "shard_2.csv",
        "shard_1_.csv", "shard__1.csv", "shard_1_x.csv", "shard_1_2.csv.manifest", "run_1.json"}) {
    write(d / n, "");
  }
  std::vector<std::string> names;
  for (const auto& f : shard_files(d)) names.push_back(f.filename().string());
  EXPECT_EQ(names, (std::vector<std::string>{"shard_2.csv", "shard_0_3.csv", "shard_1_2.csv",
                                             "shard_1_10.csv", "shard_10_0.csv"}));
  const auto listed = list_shards(d);
  ASSERT_EQ(listed.size(), 5u);
  EXPECT_FALSE(listed[0].rank.has_value());
  EXPECT_EQ(listed[3].rank, 1u);
  EXPECT_EQ(listed[3].replica, 10u);
  EXPECT_EQ(shard_file_name(std::nullopt, 3, data::LineFormat::kCsv), "shard_3.csv");
  EXPECT_EQ(shard_file_name(2, 5, data::LineFormat::kJsonl), "shard_2_5.jsonl");
}

TEST(Merge, ManyIdsThroughGrowth) {
  // Enough ids to grow the table several times; every id must survive with its own value.
  fs::path d = testing::scratch_dir("merge_many");
  std::string a = "id,v\n", b = "id,v\n";
  for (int i = 0; i < 200000; ++i) (i % 2 ? a : b) += fmt::format("k{},{}\n", i, i);
  for (int i = 0; i < 200000; i += 1000) b += fmt::format("k{},{}\n", i, i + 2);
  merge_files({write(d / "a.csv", a), write(d / "b.csv", b)}, d / "o.csv", Options{});
  auto t = read_table(d / "o.csv");
  EXPECT_FALSE(t.warning.has_value());
  ASSERT_EQ(t.ids.size(), 200000u);
  for (std::size_t r = 0; r < t.ids.size(); ++r) {
    long i = std::stol(t.ids[r].substr(1));
    ASSERT_EQ(t.values[r][0], i % 1000 == 0 ? i + 1 : i) << t.ids[r];
  }
}

}  // namespace
}  // namespace mcinfer::merge

namespace mcinfer::merge {
namespace {

// Sparse tables: every reduction over an id's rows equals the same reduction of the rows' dense
// vectors (an index a row lacks is 0 there), computed here densely; a result of 0 is not written.
TEST(SparseMerge, EveryReductionIsTheDenseOne) {
  const fs::path dir = testing::scratch_dir("merge_sparse");
  constexpr std::size_t kVocab = 12;
  struct Row {
    std::string id;
    std::vector<std::int32_t> indices;
    std::vector<double> values;
  };
  // Two files; ids a (3 rows, overlapping and disjoint indices, a value cancelling to 0 in the
  // mean), b (2 rows), c (1 row), d (no nonzero).
  const std::vector<Row> file1 = {
      {"a", {0, 3, 7}, {1, 2, 3}}, {"b", {5}, {-4}}, {"a", {3, 11}, {-1, 6}}, {"d", {}, {}}};
  const std::vector<Row> file2 = {
      {"c", {2, 4}, {0.5, 0.25}}, {"a", {0, 3}, {2, -1}}, {"b", {5, 6}, {8, 1}}};
  const double weights[] = {1.0, 3.0};
  auto write = [&](const fs::path& path, const std::vector<Row>& rows) {
    std::string bytes;
    for (const Row& r : rows)
      data::append_sparse_prediction(r.id, true, r.indices, r.values, bytes);
    std::ofstream(path) << bytes;
  };
  write(dir / "1.jsonl", file1);
  write(dir / "2.jsonl", file2);
  // The dense rows of each id, with their file's weight.
  std::map<std::string, std::vector<std::pair<double, std::vector<double>>>> dense;
  std::vector<std::string> order;
  for (int f = 0; f < 2; ++f) {
    for (const Row& r : f == 0 ? file1 : file2) {
      if (!dense.contains(r.id)) order.push_back(r.id);
      std::vector<double> v(kVocab, 0.0);
      for (std::size_t k = 0; k < r.indices.size(); ++k)
        v[static_cast<std::size_t>(r.indices[k])] = r.values[k];
      dense[r.id].emplace_back(weights[f], v);
    }
  }
  for (Reduce reduce :
       {Reduce::kMean, Reduce::kMedian, Reduce::kMax, Reduce::kMin, Reduce::kFirst}) {
    Options options;
    options.reduce = reduce;
    if (reduce == Reduce::kMean) options.weights = {weights[0], weights[1]};
    for (const char* out_name : {"m.jsonl", "m.json"}) {
      const fs::path out = dir / out_name;
      merge_files({dir / "1.jsonl", dir / "2.jsonl"}, out, options);
      auto reader = data::PredictionReader::open(out, std::nullopt);
      ASSERT_TRUE(reader->schema().sparse);
      data::PredictionRow row;
      std::size_t n = 0;
      while (reader->next(row)) {
        ASSERT_LT(n, order.size());
        ASSERT_EQ(row.id, order[n]);
        const auto& rows = dense[order[n]];
        std::vector<double> got(kVocab, 0.0);
        for (std::size_t k = 0; k < row.indices.size(); ++k) {
          ASSERT_NE(row.values[k], 0.0) << "zeros are not written";
          got[static_cast<std::size_t>(row.indices[k])] = row.values[k];
        }
        for (std::size_t v = 0; v < kVocab; ++v) {
          std::vector<double> column;
          double sum = 0, weight = 0;
          for (const auto& [w, values] : rows) {
            column.push_back(values[v]);
            sum += w * values[v];
            weight += w;
          }
          double want = 0;
          std::vector<double> sorted = column;
          std::sort(sorted.begin(), sorted.end());
          switch (reduce) {
            case Reduce::kMean:
              want = sum / weight;
              break;
            case Reduce::kMedian:
              want = sorted.size() % 2
                         ? sorted[sorted.size() / 2]
                         : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
              break;
            case Reduce::kMax:
              want = sorted.back();
              break;
            case Reduce::kMin:
              want = sorted.front();
              break;
            case Reduce::kFirst:
              want = column.front();
              break;
          }
          // Values are written as float32 (in their shortest decimal form).
          EXPECT_EQ(static_cast<float>(got[v]), static_cast<float>(want))
              << "reduce " << static_cast<int>(reduce) << " id " << order[n] << " index " << v;
        }
        ++n;
      }
      EXPECT_EQ(n, order.size());
    }
  }
}

}  // namespace
}  // namespace mcinfer::merge
