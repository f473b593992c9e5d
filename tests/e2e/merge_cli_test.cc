// `mcinfer merge` as a user runs it: flags, exit statuses, messages, files left behind.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/json.h"
#include "data/prediction_reader.h"
#include "support/cli.h"
#include "support/paths.h"
#include "support/predictions.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

fs::path write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

using testing::read_table;
using testing::Table;

// Every fixture run again through the binary: the flags reach merge as the library test
// gives them (references: pandas, tools/gen_merge_fixtures.py).
TEST(MergeCli, FixturesThroughTheCommandLine) {
  fs::path root = testing::fixture("merge");
  std::size_t runs = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    fs::path dir = entry.path();
    Json spec = read_json_file(dir / "case.json");
    for (const Json& run : spec["runs"]) {
      SCOPED_TRACE(dir.filename().string() + " " + run.dump());
      ++runs;
      fs::path out = testing::scratch_dir("merge_cli_fixture") / run["output"].get<std::string>();
      std::vector<std::string> args{"merge"};
      for (const auto& in : run["inputs"]) args.push_back((dir / in.get<std::string>()).string());
      args.insert(args.end(), {"--output", out.string()});
      if (run.contains("reduce")) args.insert(args.end(), {"--reduce", run["reduce"]});
      if (run.contains("weights")) {
        std::string w;
        for (const auto& x : run["weights"])
          w += (w.empty() ? "" : ",") + fmt::format("{}", x.get<double>());
        args.insert(args.end(), {"--weights", w});
      }
      if (run.contains("expect")) {
        args.insert(args.end(), {"--expect", (dir / run["expect"].get<std::string>()).string()});
      }
      if (run.contains("id_col")) args.insert(args.end(), {"--id-col", run["id_col"]});
      if (run.contains("order")) args.insert(args.end(), {"--order", run["order"]});
      if (run.value("allow_missing", false)) args.push_back("--allow-missing");

      auto r = run_cli(args);
      int exit = run["exit"];
      ASSERT_EQ(r.exit_code, exit) << r.err;
      for (const auto& s : run.value("error_contains", std::vector<std::string>{})) {
        EXPECT_NE(r.err.find(s), std::string::npos) << r.err;
      }
      for (const auto& s : run.value("warnings_contain", std::vector<std::string>{})) {
        EXPECT_NE(r.err.find("warning: "), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(s), std::string::npos) << r.err;
      }
      if (run.value("missing", 0) > 0) {
        std::string listed = fmt::format("{} missing ids", run["missing"].get<int>());
        EXPECT_NE(r.err.find(listed), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(run["first_missing"][0].get<std::string>()), std::string::npos);
      }
      if (exit != 0) {
        EXPECT_FALSE(fs::exists(out));
        EXPECT_EQ(r.err.find("wrote"), std::string::npos) << r.err;
        continue;
      }
      EXPECT_NE(r.err.find("merge: "), std::string::npos) << r.err;  // the summary line
      Table got = read_table(out), want = read_table(dir / run["expected"].get<std::string>());
      ASSERT_EQ(got.columns, want.columns);
      ASSERT_EQ(got.ids, want.ids);
      for (std::size_t i = 0; i < got.ids.size(); ++i) {
        for (std::size_t c = 0; c < got.columns.size(); ++c) {
          double a = got.values[i][c], b = want.values[i][c];
          ASSERT_LE(std::abs(a - b), 1e-12 * std::max(std::abs(a), std::abs(b))) << got.ids[i];
        }
      }
    }
  }
  EXPECT_GE(runs, 20u);
}

TEST(MergeCli, SummaryLine) {
  fs::path d = testing::scratch_dir("merge_cli_summary");
  write(d / "shard_0.csv", "id,p\n1,0.5\n2,0.25\n");
  write(d / "shard_1.csv", "id,p\n2,0.75\n3,1\n");
  write(d / "in.csv", "id,text\n1,a\n2,b\n3,c\n4,d\n");
  auto r = run_cli({"merge", d.string(), "-o", (d / "o.csv").string(), "--expect",
                    (d / "in.csv").string(), "--allow-missing"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("merge: 4 rows from 2 files, 3 distinct ids, 1 duplicate rows, 1 missing, "
                       "0 unexpected; wrote 3 rows to"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("1 missing ids: 4"), std::string::npos) << r.err;
  EXPECT_EQ(testing::read_file(d / "o.csv"), "id,p\n1,0.5\n2,0.5\n3,1\n");
}

TEST(MergeCli, MissingIdsExitThreeAndKeepTheOldOutput) {
  fs::path d = testing::scratch_dir("merge_cli_missing");
  write(d / "s.csv", "id,p\n1,0.5\n");
  write(d / "in.jsonl", "{\"id\": 1, \"text\": \"a\"}\n{\"id\": 2, \"text\": \"b\"}\n");
  write(d / "o.csv", "old\n");
  auto r = run_cli({"merge", (d / "s.csv").string(), "--output", (d / "o.csv").string(), "--expect",
                    (d / "in.jsonl").string()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("1 missing ids: 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing written"), std::string::npos) << r.err;
  EXPECT_EQ(testing::read_file(d / "o.csv"), "old\n");
}

TEST(MergeCli, UsageErrorsExitTwo) {
  fs::path d = testing::scratch_dir("merge_cli_usage");
  auto s = write(d / "s.csv", "id,p\n1,0.5\n").string();
  auto o = (d / "o.csv").string();
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases{
      {{"merge", s}, "--output"},
      {{"merge", "-o", o}, "files"},
      {{"merge", s, "-o", o, "--reduce", "mode"}, "--reduce"},
      {{"merge", s, "-o", o, "--order", "random"}, "--order"},
      {{"merge", s, "-o", o, "--order", "input"}, "--order input needs --expect"},
      {{"merge", s, "-o", o, "--weights", "1,2"}, "--weights: 2 weights for 1 FILE arguments"},
      {{"merge", s, "-o", o, "--weights", "x"}, "--weights"},
      {{"merge", s, "-o", o, "--weights", "0"}, "not a positive number"},
      {{"merge", s, "-o", o, "--reduce", "max", "--weights", "1"}, "mean only"},
      {{"merge", s, "-o", o, "--id-col", "key"}, "--expect"},
      {{"merge", s, "-o", o, "--allow-missing"}, "--expect"},
      {{"merge", s, "-o", (d / "o.txt").string()}, "cannot tell the format"},
      {{"merge", s, "-o", s}, "the output is also an input"},
      {{"merge", "-o", o, "--shards-dir", d.string()}, "--shards-dir needs --expect INPUT"},
      {{"merge", s, "-o", o, "--shards-dir", d.string(), "--expect", s},
       "--shards-dir merges a distributed run as the run itself would"},
      {{"merge", "-o", o, "--shards-dir", d.string(), "--expect", s, "--id-col", "key"},
       "the ranks' records say how the input is read"},
  };
  for (const auto& c : cases) {
    auto r = run_cli(c.args);
    EXPECT_EQ(r.exit_code, 2) << fmt::format("{}", fmt::join(c.args, " ")) << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(o));
}

TEST(MergeCli, FileErrorsExitOneNamingTheFile) {
  fs::path d = testing::scratch_dir("merge_cli_errors");
  auto o = (d / "o.csv").string();
  auto r = run_cli({"merge", (d / "absent.csv").string(), "-o", o});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("absent.csv: cannot open"), std::string::npos) << r.err;
  auto bad = write(d / "bad.csv", "id,p\n1,0.5\n2,zero\n3,1\n").string();
  r = run_cli({"merge", bad, "-o", o});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad.csv:3: column 'p': 'zero' is not a number"), std::string::npos)
      << r.err;
  r = run_cli({"merge", testing::scratch_dir("merge_cli_empty_dir").string(), "-o", o});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no shard files"), std::string::npos) << r.err;
  write(d / "in.csv", "id,text\n1,a\n2,\"b\n");
  r = run_cli({"merge", write(d / "s.csv", "id,p\n1,0.5\n").string(), "-o", o, "--expect",
               (d / "in.csv").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("in.csv:3: field 'text': the quote opened on line 3 never closes"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(o));
  r = run_cli({"merge", (d / "s.csv").string(), "-o", o, "--expect", (d / "in.csv").string(),
               "--on-bad-row", "skip", "--format", "csv"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("1 bad rows of"), std::string::npos) << r.err;
}

TEST(MergeCli, DirectoryWeightsApplyToEachShard) {
  fs::path d = testing::scratch_dir("merge_cli_dir_weights");
  fs::create_directories(d / "a");
  fs::create_directories(d / "b");
  write(d / "a" / "shard_0.csv", "id,p\n1,1\n");
  write(d / "a" / "shard_1.csv", "id,p\n2,1\n");
  write(d / "b" / "shard_0.jsonl", "{\"id\": \"1\", \"p\": 4}\n{\"id\": \"2\", \"p\": 7}\n");
  auto r = run_cli({"merge", (d / "a").string(), (d / "b").string(), "-o", (d / "o.jsonl").string(),
                    "--weights", "2,1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(testing::read_file(d / "o.jsonl"), "{\"id\":\"1\",\"p\":2}\n{\"id\":\"2\",\"p\":3}\n");
}

}  // namespace
}  // namespace mcinfer
