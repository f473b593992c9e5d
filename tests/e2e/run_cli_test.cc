// `mcinfer run` end to end, as a user runs it: outputs against transformers' reference values,
// every replica count and schedule against one replica, reproducibility, duplicate ids, bad rows,
// the memory plan, and never an output file after a failure.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "core/json.h"
#include "support/cli.h"
#include "support/fixture_rows.h"
#include "support/minilm.h"
#include "support/predictions.h"
#include "support/reference.h"
#include "support/rows.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;
using testing::write_fixture_rows;

std::vector<std::string> run_args(const std::string& model_dir, const fs::path& input,
                                  const fs::path& output, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"run",      model_dir,       "--input", input.string(),
                                   "--output", output.string(), "--quiet"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

class RunFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(RunFixture, OutputsMatchTransformers) {
  const std::string model = GetParam();
  auto dir = testing::scratch_dir("run_fixture_" + model);
  auto input = write_fixture_rows(dir, model);
  const std::string model_dir = testing::fixture("models/" + model).string();
  Json meta = read_json_file(testing::fixture("models/" + model + "/reference.json"));
  testing::Reference ref(testing::fixture("models/" + model + "/reference.safetensors"));

  struct Case {
    std::vector<std::string> flags;
    std::string reference;
  };
  std::vector<Case> cases = {{{"--task", "embed"}, "pooled_mean"},
                             {{"--task", "embed", "--normalize"}, "pooled_mean_normalized"},
                             {{"--task", "embed", "--pooling", "cls"}, "pooled_cls"}};
  if (meta["task"] == "classify") {
    cases.push_back({{}, "probs"});
    cases.push_back({{"--activation", "none"}, "logits"});
  }
  for (const auto& c : cases) {
    auto output = dir / "out.csv";
    auto flags = c.flags;
    flags.insert(flags.end(), {"--precision", "fp32"});  // exact parity; bf16: precision_cli_test
    auto r = run_cli(run_args(model_dir, input, output, flags));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto table = testing::read_table(output);
    auto want = ref.floats(c.reference);
    const std::size_t dim = want.size() / table.ids.size();
    ASSERT_EQ(table.columns.size(), dim) << c.reference;
    double worst = 0;
    for (std::size_t i = 0; i < table.ids.size(); ++i) {
      EXPECT_EQ(table.ids[i], "row" + std::to_string(i));
      for (std::size_t j = 0; j < dim; ++j)
        worst = std::max(worst, std::abs(table.values[i][j] - want[i * dim + j]));
    }
    EXPECT_LE(worst, 1e-5) << model << " " << c.reference;
  }
  if (meta["task"] == "classify") {
    // Columns are the labels from id2label.
    auto table = testing::read_table(dir / "out.csv");
    for (const auto& [id, label] : meta["id2label"].items()) {
      EXPECT_EQ(table.columns.at(std::stoul(id)), label.get<std::string>());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, RunFixture,
                         ::testing::Values("bert_cls_single", "bert_cls_multi", "bert_regression",
                                           "roberta_cls", "xlmr_cls", "xlmr_embed_f16",
                                           "distilbert_cls", "distilbert_embed_sinusoidal",
                                           "bert_sharded", "bert_bf16",
                                           // saved and computed by transformers 5
                                           "tf5_bert_cls_single", "tf5_xlmr_cls",
                                           "tf5_distilbert_cls", "tf5_roberta_embed"),
                         [](const auto& info) { return info.param; });

// Many rows with duplicate ids, for the schedule tests: the fixture rows repeated, with every
// fifth row reusing an earlier id.
fs::path write_many_rows(const fs::path& dir, int count) {
  return testing::write_varied_rows(dir / "many.jsonl", "bert_cls_multi", count, 5, [](int i) {
    return fmt::format("x{}", (i % 5 == 4) ? i - 3 : i);
  });
}

TEST(RunSchedules, AnyReplicaCountAndScheduleEqualsOneReplica) {
  auto dir = testing::scratch_dir("run_schedules");
  auto input = write_many_rows(dir, 203);
  const std::string model = testing::fixture("models/bert_cls_multi").string();
  auto base_out = dir / "base.csv";
  // fp32: batches of other compositions round the same values only there (bf16 GEMM outputs
  // can differ in their last bit, ~1e-4 here; precision_cli_test bounds bf16 against fp32).
  auto base = run_cli(run_args(model, input, base_out, {"--replicas", "1", "--precision", "fp32"}));
  ASSERT_EQ(base.exit_code, 0) << base.err;
  auto want = testing::read_table(base_out);
  // 203 rows with every fifth id a repeat: 163 distinct ids, in first-appearance order.
  ASSERT_EQ(want.ids.size(), 163u);
  EXPECT_EQ(want.ids[0], "x0");
  EXPECT_EQ(want.ids[3], "x3");
  EXPECT_EQ(want.ids[4], "x5");
  for (const char* schedule : {"dynamic", "static"}) {
    for (const char* replicas : {"1", "2", "3", "7"}) {
      auto out = dir / fmt::format("{}_{}.csv", schedule, replicas);
      auto r =
          run_cli(run_args(model, input, out,
                           {"--replicas", replicas, "--schedule", schedule, "--batch-size", "4",
                            "--batch-tokens", "64", "--precision", "fp32", "--shards-dir",
                            (dir / fmt::format("shards_{}_{}", schedule, replicas)).string()}));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      auto got = testing::read_table(out);
      EXPECT_EQ(got.ids, want.ids) << schedule << " " << replicas;
      // fp32 promises the same bytes whatever the batch composition.
      EXPECT_EQ(testing::max_abs_difference(got, want), 0.0) << schedule << " " << replicas;
    }
  }
}

TEST(RunSchedules, SameFlagsSameBytes) {
  auto dir = testing::scratch_dir("run_repro");
  auto input = write_many_rows(dir, 150);
  const std::string model = testing::fixture("models/bert_cls_multi").string();
  for (const char* schedule : {"dynamic", "static"}) {
    std::string first;
    for (int i = 0; i < 3; ++i) {
      auto out = dir / "out.csv";
      auto r = run_cli(run_args(
          model, input, out, {"--replicas", "3", "--schedule", schedule, "--batch-tokens", "80"}));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      std::string bytes = testing::read_file(out);
      if (i == 0) first = bytes;
      EXPECT_EQ(bytes, first) << schedule << " run " << i;
    }
  }
}

TEST(RunSchedules, StaticShardsHoldTheSamplersRowsWithPaddingDuplicates) {
  auto dir = testing::scratch_dir("run_static_shards");
  auto input = write_fixture_rows(dir, "bert_cls_single", 2);  // 12 rows
  auto shards = dir / "shards";
  auto r =
      run_cli(run_args(testing::fixture("models/bert_cls_single").string(), input, dir / "out.csv",
                       {"--replicas", "5", "--schedule", "static", "--batch-size", "2",
                        "--shards-dir", shards.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // DistributedSampler(12 rows, 5 replicas): padded to 15 with rows 0, 1, 2 again.
  std::vector<std::vector<std::string>> want = {{"row0", "row5", "row10"},
                                                {"row1", "row6", "row11"},
                                                {"row2", "row7", "row0"},
                                                {"row3", "row8", "row1"},
                                                {"row4", "row9", "row2"}};
  for (int rank = 0; rank < 5; ++rank) {
    auto shard = testing::read_table(shards / fmt::format("shard_{}.csv", rank));
    EXPECT_EQ(shard.ids, want[rank]) << "rank " << rank;
  }
  auto out = testing::read_table(dir / "out.csv");
  EXPECT_EQ(out.ids.size(), 12u);
}

TEST(RunInput, DuplicateIdsAreAveragedInInputOrder) {
  auto dir = testing::scratch_dir("run_duplicates");
  auto model = testing::fixture("models/bert_cls_single").string();
  std::ofstream(dir / "in.jsonl") << R"({"id": 7, "input_ids": [1, 5, 9, 2]})"
                                     "\n"
                                     R"({"id": "a", "input_ids": [1, 6, 2]})"
                                     "\n"
                                     R"({"id": 7, "input_ids": [1, 8, 8, 8, 2]})"
                                     "\n"
                                     R"({"id": "7", "input_ids": [1, 5, 9, 2]})"
                                     "\n";
  ASSERT_EQ(run_cli(run_args(model, dir / "in.jsonl", dir / "out.jsonl", {"--activation", "none"}))
                .exit_code,
            0);
  // Each row alone, to average by hand.
  std::ofstream(dir / "one.jsonl") << R"({"id": "p", "input_ids": [1, 5, 9, 2]})"
                                      "\n"
                                      R"({"id": "q", "input_ids": [1, 8, 8, 8, 2]})"
                                      "\n";
  ASSERT_EQ(run_cli(run_args(model, dir / "one.jsonl", dir / "one.csv", {"--activation", "none"}))
                .exit_code,
            0);
  auto out = testing::read_table(dir / "out.jsonl");
  auto one = testing::read_table(dir / "one.csv");
  // Ids compare as exact text: the number 7 and the string "7" are one id, written as first read.
  ASSERT_EQ(out.ids, (std::vector<std::string>{"7", "a"}));
  std::string text = testing::read_file(dir / "out.jsonl");
  EXPECT_EQ(text.rfind("{\"id\":7,", 0), 0u) << text;                 // numbers stay numbers
  EXPECT_NE(text.find("{\"id\":\"a\","), std::string::npos) << text;  // strings stay strings
  for (std::size_t j = 0; j < 2; ++j) {
    EXPECT_NEAR(out.values[0][j], (2 * one.values[0][j] + one.values[1][j]) / 3, 1e-6);
  }
}

struct BadInput {
  const char* name;
  const char* file;
  const char* content;
  const char* message;  // in the error, after FILE:LINE
  int line;
};

TEST(RunInput, BadRowsStopWithFileAndLineOrAreSkippedAndCounted) {
  auto model = testing::fixture("models/bert_cls_single").string();
  std::vector<BadInput> cases = {
      {"ragged csv", "in.csv", "id,input\n1,a\n2,b,c\n3,d\n", "", 3},
      {"unclosed quote", "in.csv", "id,input\n1,a\n2,\"never closed\n", "", 3},
      {"bad json", "in.jsonl",
       "{\"id\": 1, \"input_ids\": [1,2]}\n{\"id\": 2, \"input_ids\": [1,2\n{\"id\": 3, "
       "\"input_ids\": [3]}\n",
       "", 2},
      {"missing column", "in.jsonl",
       "{\"id\": 1, \"input_ids\": [1,2]}\n{\"id\": 2}\n{\"id\": 3, \"input_ids\": [3]}\n", "", 2},
      {"id out of vocabulary", "in.jsonl",
       "{\"id\": 1, \"input_ids\": [1,2]}\n{\"id\": 2, \"input_ids\": [1,99999]}\n",
       "outside the vocabulary", 2},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto dir = testing::scratch_dir("run_bad_rows");
    auto input = dir / c.file;
    std::ofstream(input) << c.content;
    auto output = dir / "out.csv";
    // CSV rows carry text; these fixtures have no tokenizer, so use a model that does for CSV.
    std::vector<std::string> extra = {"--text-col", "input"};
    std::string m = model;
    if (std::string(c.file).ends_with(".csv")) {
      if (!fs::exists(testing::minilm_dir() / "model.safetensors")) continue;
      m = testing::minilm_dir().string();
    }
    auto r = run_cli(run_args(m, input, output, extra));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(fmt::format("{}:{}:", input.string(), c.line)), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(output));
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), {}), 1) << "left files behind";

    auto report = dir / "report.json";
    r = run_cli(
        run_args(m, input, output,
                 {"--text-col", "input", "--on-bad-row", "skip", "--report", report.string()}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    Json rep = read_json_file(report);
    EXPECT_EQ(rep["bad_rows"], 1);
    EXPECT_EQ(rep["bad_row_list"][0]["line"], c.line);
    EXPECT_EQ(testing::read_table(output).ids.size(), rep["rows"].get<std::size_t>());
  }
}

TEST(RunInput, MemoryPlanRefusesWithNumbers) {
  auto dir = testing::scratch_dir("run_memory_plan");
  auto input = write_fixture_rows(dir, "bert_cls_single");
  auto r =
      run_cli(run_args(testing::fixture("models/bert_cls_single").string(), input, dir / "out.csv",
                       {"--batch-tokens", "100000000000", "--replicas", "4"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("memory plan does not fit: 4 replicas x"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--batch-tokens"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out.csv"));
}

TEST(RunInput, UsageErrorsExitTwo) {
  auto dir = testing::scratch_dir("run_usage");
  auto input = write_fixture_rows(dir, "bert_cls_single");
  auto model = testing::fixture("models/bert_cls_single").string();
  EXPECT_EQ(run_cli(run_args(model, input, dir / "o.csv", {"--replicas", "zero"})).exit_code, 2);
  EXPECT_EQ(run_cli(run_args(model, input, dir / "o.csv", {"--max-len", "100000"})).exit_code, 2);
  // 0 is refused like 1 (it once meant "the model's default"); the message gives the range.
  for (const char* n : {"0", "1"}) {
    auto r = run_cli(run_args(model, input, dir / "o.csv", {"--max-len", n}));
    EXPECT_EQ(r.exit_code, 2) << n << ": " << r.err;
    EXPECT_NE(r.err.find(fmt::format("--max-len {} is outside [2, 40]", n)), std::string::npos)
        << r.err;
  }
  auto negative = run_cli(run_args(model, input, dir / "o.csv", {"--max-len", "-1"}));
  EXPECT_EQ(negative.exit_code, 2) << negative.err;
  EXPECT_NE(
      negative.err.find("--max-len must be a whole number, 0 or more up to 2147483647, not '-1'"),
      std::string::npos)
      << negative.err;
  EXPECT_EQ(run_cli(run_args(testing::fixture("models/bert_embed").string(), input, dir / "o.csv",
                             {"--task", "classify"}))
                .exit_code,
            2);
  EXPECT_EQ(run_cli({"run", model, "--input", input.string()}).exit_code, 2);  // no --output
  EXPECT_FALSE(fs::exists(dir / "o.csv"));
}

TEST(RunReport, ProfileCountsEveryStageShardWritesIncluded) {
  auto dir = testing::scratch_dir("run_profile");
  auto input = write_many_rows(dir, 120);
  auto report = dir / "report.json";
  auto r = run_cli(run_args(
      testing::fixture("models/bert_cls_multi").string(), input, dir / "out.csv",
      {"--replicas", "2", "--batch-tokens", "64", "--profile", "--report", report.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json rep = read_json_file(report);
  // Every batch is appended to a shard and fsynced (twice, with its manifest record): that time
  // is measured, not left at 0.
  const double shard_io = rep["time_seconds"]["shard_io"].get<double>();
  EXPECT_GT(shard_io, 0.0);
  EXPECT_GT(rep["time_share"]["shard_io"].get<double>(), 0.0);
  double busy = 0;
  for (const auto& replica : rep["replica_stats"]) busy += replica["busy_seconds"].get<double>();
  EXPECT_LT(shard_io, busy);  // the writes are part of each replica's busy time
  double share = 0;
  for (const auto& [stage, s] : rep["time_share"].items()) share += s.get<double>();
  EXPECT_NEAR(share, 1.0, 1e-9);
}

TEST(RunMiniLM, TextToEmbeddingsMatchesSentenceTransformers) {
  MCINFER_NEED_MINILM();
  auto dir = testing::scratch_dir("run_minilm");
  std::ifstream in(testing::fixture("minilm/sentences.txt"));
  auto csv = dir / "sentences.csv";
  {
    std::ofstream out(csv);
    out << "id,text\n";
    std::string line;
    int i = 0;
    while (std::getline(in, line)) {
      std::string quoted = "\"";
      for (char ch : line) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
      out << "s" << i++ << "," << quoted << "\"\n";
    }
  }
  // No flag but the precision: the modules (mean pooling, Normalize) decide, as
  // SentenceTransformer.encode does; compared per value, which only fp32 reproduces.
  auto output = dir / "emb.csv";
  auto r = run_cli(run_args(testing::minilm_dir().string(), csv, output, {"--precision", "fp32"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto table = testing::read_table(output);
  testing::Reference ref(testing::fixture("minilm/reference.safetensors"));
  auto want = ref.floats("embeddings");
  const std::size_t h = 384;
  ASSERT_EQ(table.columns.size(), h);
  ASSERT_EQ(table.ids.size() * h, want.size());
  for (std::size_t i = 0; i < table.ids.size(); ++i) {
    EXPECT_EQ(table.ids[i], "s" + std::to_string(i));
    for (std::size_t j = 0; j < h; ++j) {
      EXPECT_NEAR(table.values[i][j], want[i * h + j], 1e-5) << "sentence " << i << " value " << j;
    }
  }
  // --no-normalize: mean pooling alone, whose directions are the same.
  r = run_cli(run_args(testing::minilm_dir().string(), csv, output,
                       {"--no-normalize", "--precision", "fp32"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  table = testing::read_table(output);
  double farthest_norm = 0;
  for (std::size_t i = 0; i < table.ids.size(); ++i) {
    double norm = 0;
    for (double v : table.values[i]) norm += v * v;
    norm = std::sqrt(norm);
    farthest_norm = std::max(farthest_norm, std::abs(norm - 1));
    for (std::size_t j = 0; j < h; ++j)
      EXPECT_NEAR(table.values[i][j] / norm, want[i * h + j], 1e-5) << "sentence " << i;
  }
  EXPECT_GT(farthest_norm, 0.1);
}

}  // namespace
}  // namespace mcinfer
