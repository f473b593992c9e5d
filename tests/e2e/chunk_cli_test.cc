// --long-input: rows longer than --max-len. chunk: every window computed and each row reduced
// from its windows, against transformers over the same windows reduced the same way
// (tests/fixtures/chunk/<model>/, tools/gen_chunk_fixtures.py), with windows of a row spread over
// replicas and batches; a run killed between windows of one row and resumed gives the same
// output. truncate: the report counts the rows cut and their lost tokens.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/json.h"
#include "support/cli.h"
#include "support/predictions.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;

struct ChunkCase {
  std::string model;  // references in tests/fixtures/chunk/<model>; cases.json names the model
  std::string name;
};
void PrintTo(const ChunkCase& c, std::ostream* os) { *os << c.model << "/" << c.name; }

std::vector<ChunkCase> all_cases() {
  std::vector<ChunkCase> out;
  for (const char* model :
       {"bert_cls", "roberta_cls", "xlmr_embed", "bert_cls_pair", "deberta_cls"}) {
    const Json meta = read_json_file(testing::fixture(fmt::format("chunk/{}/cases.json", model)));
    for (const Json& c : meta["cases"]) out.push_back({model, c["case"].get<std::string>()});
  }
  return out;
}

const Json& case_meta(const Json& meta, const std::string& name) {
  for (const Json& c : meta["cases"])
    if (c["case"] == name) return c;
  throw std::runtime_error("no case " + name);
}

std::vector<std::string> run_args(const ChunkCase& c, const fs::path& output,
                                  const std::string& schedule) {
  const Json meta = read_json_file(testing::fixture("chunk/" + c.model + "/cases.json"));
  std::vector<std::string> a = {
      "run", testing::fixture(meta["model"].get<std::string>()).string(), "--input",
      testing::fixture("chunk/" + c.model + "/input.csv").string(), "--output", output.string(),
      "--schedule", schedule, "--replicas", "2",
      // Small batches: a row's windows land in several batches and on both replicas.
      "--batch-size", "3", "--batch-tokens", "64", "--precision", "fp32", "--quiet"};
  for (const Json& f : case_meta(meta, c.name)["flags"]) a.push_back(f.get<std::string>());
  return a;
}

class Chunked : public ::testing::TestWithParam<ChunkCase> {};

TEST_P(Chunked, RowsReducedFromTheirWindowsAsTransformersComputes) {
  const ChunkCase& c = GetParam();
  const Json meta = read_json_file(testing::fixture("chunk/" + c.model + "/cases.json"));
  const Json& cm = case_meta(meta, c.name);
  std::uint64_t windows = 0, chunked = 0;
  for (const Json& n : cm["windows_per_row"]) {
    windows += n.get<std::uint64_t>();
    chunked += n.get<std::uint64_t>() > 1;
  }
  auto want = testing::read_table(
      testing::fixture(fmt::format("chunk/{}/expected_{}.csv", c.model, c.name)));
  auto dir = testing::scratch_dir("chunk_" + c.model + "_" + c.name);
  for (const char* schedule : {"dynamic", "static"}) {
    auto args = run_args(c, dir / "out.csv", schedule);
    args.insert(args.end(), {"--report", (dir / "report.json").string()});
    auto r = testing::run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto got = testing::read_table(dir / "out.csv");
    EXPECT_EQ(got.columns, want.columns);
    EXPECT_EQ(got.ids, want.ids) << schedule;
    EXPECT_LE(testing::max_abs_difference(got, want), 1e-5) << schedule;
    const Json report = read_json_file(dir / "report.json");
    EXPECT_EQ(report["long_input"], "chunk");
    EXPECT_EQ(report["chunked_rows"].get<std::uint64_t>(), chunked) << schedule;
    // A pair whose first text leaves the second no room is truncated instead (1 window).
    std::uint64_t truncated = 0;
    for (std::size_t i = 0; i < cm["windows_per_row"].size(); ++i) {
      const auto tokens = meta["tokens_per_row"][i].get<std::uint64_t>();
      truncated += tokens > meta["max_len"].get<std::uint64_t>() && cm["windows_per_row"][i] == 1;
    }
    EXPECT_EQ(report["truncated_rows"].get<std::uint64_t>(), truncated) << schedule;
    if (c.model == "bert_cls_pair") {
      EXPECT_GE(truncated, 1u);
    }
    if (std::string(schedule) == "dynamic") {
      EXPECT_EQ(report["windows"].get<std::uint64_t>(), windows);
      EXPECT_EQ(report["rows_computed"].get<std::uint64_t>(), cm["windows_per_row"].size());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Chunked, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return info.param.model + "_" + info.param.name; });

// SPLADE sparse encoders: each window's vocabulary vector reduced, then the row's top-k
// (tests/fixtures/chunk_sparse/, tools/gen_chunk_sparse_fixtures.py: SparseEncoder's modules on
// each of Hugging Face's windows), written as sparse JSONL rows: the same nonzero indices as the
// reference and every value within 1e-5.
TEST(ChunkedSparse, RowsReducedFromTheirWindowsAsSparseEncoderComputes) {
  for (const char* model :
       {"sparse6_bert_max_log1p", "sparse6_bert_sum_relu", "sparse6_bert_max_active8"}) {
    const fs::path fixtures = testing::fixture(fmt::format("chunk_sparse/{}", model));
    const Json meta = read_json_file(fixtures / "cases.json");
    for (const Json& c : meta["cases"]) {
      const std::string name = c["case"].get<std::string>();
      SCOPED_TRACE(fmt::format("{} {}", model, name));
      const auto want = testing::read_table(fixtures / fmt::format("expected_{}.csv", name));
      auto dir = testing::scratch_dir(fmt::format("chunk_sparse_{}_{}", model, name));
      std::vector<std::string> args = {"run",
                                       testing::fixture(meta["model"].get<std::string>()).string(),
                                       "--input",
                                       (fixtures / "input.csv").string(),
                                       "--output",
                                       (dir / "out.jsonl").string(),
                                       "--replicas",
                                       "2",
                                       "--batch-tokens",
                                       "48",
                                       "--precision",
                                       "fp32",
                                       "--quiet"};
      for (const Json& f : c["flags"]) args.push_back(f.get<std::string>());
      const auto r = testing::run_cli(args);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const auto got = testing::read_sparse_as_dense(dir / "out.jsonl", want.columns.size());
      ASSERT_EQ(got.ids, want.ids);
      EXPECT_LE(testing::max_abs_difference(got, want), 1e-5);
      std::size_t nonzero_mismatches = 0;
      for (std::size_t row = 0; row < got.values.size(); ++row)
        for (std::size_t j = 0; j < got.values[row].size(); ++j)
          nonzero_mismatches += (got.values[row][j] != 0.0) != (want.values[row][j] != 0.0);
      EXPECT_EQ(nonzero_mismatches, 0u);
    }
  }
}

// Killed (SIGKILL) right after the n-th window that leaves its row incomplete, or at the n-th
// shard write (a row's last window in; the other rows in flight part-done), then resumed: the
// part-done rows are recomputed whole, and the output is the uninterrupted run's.
TEST(ChunkedResume, KilledBetweenWindowsOfOneRow) {
  const ChunkCase c{"xlmr_embed", "s16_tw"};
  auto dir = testing::scratch_dir("chunk_resume");
  auto want = testing::read_table(testing::fixture("chunk/xlmr_embed/expected_s16_tw.csv"));
  for (const char* schedule : {"dynamic", "static"}) {
    for (const char* fault : {"window-pending:1", "window-pending:7", "shard-write:2"}) {
      const std::string how = fmt::format("{} killed at {}", schedule, fault);
      fs::remove_all(dir / "shards");
      auto args = run_args(c, dir / "out.csv", schedule);
      // One window per batch (32 tokens each): a row's windows are many batches.
      for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--batch-tokens") args[i + 1] = "32";
        if (args[i] == "--batch-size") args[i + 1] = "1";
      }
      args.insert(args.end(), {"--shards-dir", (dir / "shards").string()});
      testing::CliOptions crash;
      crash.env = {fmt::format("MCINFER_FAULT={}", fault)};
      ASSERT_EQ(testing::run_cli(args, crash).exit_code, 137) << how;
      ASSERT_FALSE(fs::exists(dir / "out.csv")) << how;
      args.insert(args.end(), {"--resume", "--report", (dir / "report.json").string()});
      auto r = testing::run_cli(args);
      ASSERT_EQ(r.exit_code, 0) << how << ": " << r.err;
      auto got = testing::read_table(dir / "out.csv");
      EXPECT_EQ(got.ids, want.ids) << how;
      EXPECT_LE(testing::max_abs_difference(got, want), 1e-5) << how;
      const Json report = read_json_file(dir / "report.json");
      EXPECT_TRUE(report["resumed"].get<bool>());
      // window-pending:1 is a row's first window, before any row can be durable. (After
      // shard-write:2 another replica's first write may still lack its manifest record: no count
      // is certain there.)
      if (std::string(fault) == "window-pending:1") {
        EXPECT_EQ(report["rows_from_earlier_run"].get<std::uint64_t>(), 0u) << how;
      }
      fs::remove(dir / "out.csv");
    }
  }
}

TEST(LongInput, TruncateCountsRowsAndLostTokens) {
  const Json meta = read_json_file(testing::fixture("chunk/roberta_cls/cases.json"));
  const auto max_len = meta["max_len"].get<std::uint64_t>();
  std::uint64_t rows = 0, lost = 0;
  for (const Json& n : meta["tokens_per_row"]) {
    const auto tokens = n.get<std::uint64_t>();
    if (tokens > max_len) {
      ++rows;
      lost += tokens - max_len;
    }
  }
  ASSERT_GT(rows, 3u);
  auto dir = testing::scratch_dir("chunk_truncate");
  auto r = testing::run_cli({"run", testing::fixture("text/roberta_cls").string(), "--input",
                             testing::fixture("chunk/roberta_cls/input.csv").string(), "--output",
                             (dir / "out.csv").string(), "--max-len", std::to_string(max_len),
                             "--replicas", "2", "--report", (dir / "report.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json report = read_json_file(dir / "report.json");
  EXPECT_EQ(report["long_input"], "truncate");
  EXPECT_EQ(report["truncated_rows"].get<std::uint64_t>(), rows);
  EXPECT_EQ(report["truncated_lost_tokens"].get<std::uint64_t>(), lost);
  EXPECT_EQ(report["chunked_rows"].get<std::uint64_t>(), 0u);
  EXPECT_NE(r.err.find(fmt::format("{} rows were longer than --max-len {} and were truncated, "
                                   "losing {} tokens",
                                   rows, max_len, lost)),
            std::string::npos)
      << r.err;
}

// `mcinfer tokenize --stride K` prints the windows run --long-input chunk computes: HF's.
TEST(LongInput, TokenizePrintsTheWindows) {
  const Json data = read_json_file(testing::fixture("chunk/windows/bpe_files.json"));
  const Json& record = data["texts"][0];
  auto dir = testing::scratch_dir("chunk_tokenize");
  { std::ofstream(dir / "text.txt") << record["text"].get<std::string>() << "\n"; }
  const auto ids = record["ids"].get<std::vector<int>>();
  for (const Json& c : record["cases"]) {
    auto r = testing::run_cli({"tokenize", testing::fixture("tokenizer/models/bpe_files").string(),
                               "--max-len", std::to_string(c["max_len"].get<int>()), "--stride",
                               std::to_string(c["stride"].get<int>())},
                              (dir / "text.txt").string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string want;
    for (const Json& w : c["windows"]) {
      std::vector<int> window = {ids.front()};
      window.insert(window.end(), ids.begin() + 1 + w[0].get<int>(),
                    ids.begin() + 1 + w[1].get<int>());
      window.push_back(ids.back());
      want += Json(window).dump() + "\n";
    }
    EXPECT_EQ(r.out, want) << "max_len " << c["max_len"] << " stride " << c["stride"];
  }
}

// ModernBERT (rotary positions restart in every window): a row past --max-len, chunked, is the
// mean of its windows run as rows of their own (their ids as `tokenize` prints them; each window
// through the model is what SentenceTransformer.encode gives, St6Cli).
TEST(LongInput, ModernBertRowIsTheMeanOfItsWindows) {
  const fs::path model = testing::fixture("st/st6_modernbert_prompts");
  auto dir = testing::scratch_dir("chunk_modernbert");
  const std::string text =
      "Rotary positions start again at zero in every window, so a long row is cut into windows "
      "that the model reads as rows of their own, and their pooled vectors are averaged.";
  {
    std::ofstream(dir / "text.txt") << text << "\n";
    std::ofstream(dir / "row.csv") << "id,text\nlong,\"" << text << "\"\n";
  }
  const std::vector<std::string> geometry = {"--max-len", "24", "--stride", "4"};
  std::vector<std::string> tokenize = {"tokenize", model.string()};
  tokenize.insert(tokenize.end(), geometry.begin(), geometry.end());
  auto r = testing::run_cli(tokenize, (dir / "text.txt").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::ofstream windows(dir / "windows.jsonl");
  int count = 0;
  for (std::string line; std::getline(lines, line);)
    windows << Json{{"id", "w" + std::to_string(count++)}, {"input_ids", Json::parse(line)}}.dump()
            << "\n";
  windows.close();
  ASSERT_GE(count, 3) << r.out;
  const std::vector<std::string> embed = {"--task", "embed",          "--pooling",
                                          "mean",   "--no-normalize", "--quiet"};
  std::vector<std::string> each = {"run",       model.string(),
                                   "--input",   (dir / "windows.jsonl").string(),
                                   "--output",  (dir / "windows.csv").string(),
                                   "--max-len", "24"};
  each.insert(each.end(), embed.begin(), embed.end());
  r = testing::run_cli(each);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> chunked = {"run",
                                      model.string(),
                                      "--input",
                                      (dir / "row.csv").string(),
                                      "--output",
                                      (dir / "row_out.csv").string(),
                                      "--long-input",
                                      "chunk",
                                      "--chunk-reduce",
                                      "mean"};
  chunked.insert(chunked.end(), geometry.begin(), geometry.end());
  chunked.insert(chunked.end(), embed.begin(), embed.end());
  r = testing::run_cli(chunked);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const testing::Table per_window = testing::read_table(dir / "windows.csv");
  const testing::Table row = testing::read_table(dir / "row_out.csv");
  ASSERT_EQ(per_window.values.size(), static_cast<std::size_t>(count));
  ASSERT_EQ(row.values.size(), 1u);
  ASSERT_EQ(row.values[0].size(), per_window.values[0].size());
  double worst = 0, spread = 0;
  for (std::size_t c = 0; c < row.values[0].size(); ++c) {
    double mean = 0;
    for (const auto& w : per_window.values) mean += w[c];
    mean /= count;
    worst = std::max(worst, std::fabs(row.values[0][c] - mean));
    spread = std::max(spread, std::fabs(per_window.values[0][c] - mean));
  }
  EXPECT_LE(worst, 1e-5);
  EXPECT_GT(spread, 1e-3) << "the windows must differ, else the mean proves nothing";
}

// `inspect` gives a window's geometry; its formula for the windows of a row is HF's count.
TEST(LongInput, InspectGivesTheWindowGeometry) {
  auto r = testing::run_cli({"inspect", testing::fixture("text/roberta_cls").string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json facts = parse_json(r.out, "inspect --json");
  const auto specials = facts["special_tokens"].get<std::uint64_t>();
  EXPECT_EQ(specials, 2u);
  EXPECT_EQ(facts["window_content_tokens"].get<std::uint64_t>(),
            facts["max_len"].get<std::uint64_t>() - specials);
  const Json meta = read_json_file(testing::fixture("chunk/roberta_cls/cases.json"));
  const std::uint64_t window = meta["max_len"].get<std::uint64_t>() - specials;
  for (const Json& c : meta["cases"]) {
    const auto stride = std::stoull(c["flags"][5].get<std::string>());
    ASSERT_EQ(c["flags"][4], "--stride");
    for (std::size_t i = 0; i < meta["tokens_per_row"].size(); ++i) {
      const std::uint64_t text = meta["tokens_per_row"][i].get<std::uint64_t>() - specials;
      const std::uint64_t want =
          text <= window ? 1 : 1 + (text - window + (window - stride) - 1) / (window - stride);
      EXPECT_EQ(c["windows_per_row"][i].get<std::uint64_t>(), want) << c["case"] << " row " << i;
    }
  }
  r = testing::run_cli({"inspect", testing::fixture("text/roberta_cls").string()});
  EXPECT_NE(r.out.find("--long-input chunk: windows of"), std::string::npos) << r.out;
}

TEST(LongInput, FlagsThatCannotWorkAreRefused) {
  auto dir = testing::scratch_dir("chunk_flags");
  const std::string model = testing::fixture("text/roberta_cls").string();
  const std::string input = testing::fixture("chunk/roberta_cls/input.csv").string();
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = {
        "run", model, "--input", input, "--output", (dir / "out.csv").string(), "--quiet"};
    a.insert(a.end(), extra.begin(), extra.end());
    return testing::run_cli(a);
  };
  auto r = run({"--max-len", "32", "--long-input", "chunk", "--stride", "30"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--stride 30 is too large for --max-len 32: a window holds 30 tokens after "
                       "its 2 special tokens"),
            std::string::npos)
      << r.err;
  r = run({"--stride", "4"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--stride applies to --long-input chunk"), std::string::npos) << r.err;
  r = run({"--long-input", "windows"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(fs::exists(dir / "out.csv"));
}

}  // namespace
}  // namespace mcinfer
