// Directories saved by the current reference stack, through the CLI: sentence-transformers 6
// (tests/fixtures/st/st6_*, tools/gen_st6_fixtures.py; and one with prompts saved by 3.3.1) with
// their prompts, as
// SentenceTransformer(dir).encode(texts, prompt_name=..., prompt=...) gives them; the prompt in
// force said by inspect, recorded by the report and held by --resume; and the tokenizer as
// transformers 5 builds it (tests/fixtures/tokenizer_dirs/tf5_*).
#include <gtest/gtest.h>

#include <fstream>

#include "core/json.h"
#include "support/cli.h"
#include "support/predictions.h"
#include "support/reference.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

// fp32 against encode(): what the engine achieves is ~1e-7 (a float32 sum's rounding).
constexpr double kTolerance = 1e-5;

fs::path st6(const std::string& name) { return testing::fixture("st/" + name); }

std::vector<std::string> run_args(const std::string& name, const fs::path& output,
                                  std::vector<std::string> extra = {}) {
  const fs::path dir = st6(name);
  std::vector<std::string> a = {
      "run",      dir.string(),    "--input",     (dir / "input.csv").string(),
      "--output", output.string(), "--precision", "fp32"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// The flags that ask mcinfer for what encode(**args) did.
std::vector<std::string> flags_of(const Json& args) {
  std::vector<std::string> flags;
  if (args.contains("prompt_name")) flags = {"--prompt-name", args["prompt_name"]};
  if (args.contains("prompt")) flags = {"--prompt", args["prompt"]};
  // encode(truncate_dim=N, normalize_embeddings=True): the models with it normalise anyway.
  if (args.contains("truncate_dim")) {
    flags.push_back("--truncate-dim");
    flags.push_back(std::to_string(args["truncate_dim"].get<int>()));
  }
  return flags;
}

double worst_difference(const fs::path& output, const std::vector<float>& want) {
  const testing::Table got = testing::read_table(output);
  EXPECT_FALSE(got.ids.empty());
  const std::size_t dim = got.columns.size();
  EXPECT_EQ(got.ids.size() * dim, want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.ids.size() && (i + 1) * dim <= want.size(); ++i) {
    EXPECT_EQ(got.ids[i], fmt::format("t{:02d}", i));
    for (std::size_t j = 0; j < dim; ++j)
      worst = std::max(worst, std::abs(got.values[i][j] - want[i * dim + j]));
  }
  return worst;
}

class St6Cli : public ::testing::TestWithParam<std::string> {};

TEST_P(St6Cli, EveryPromptCaseGivesEncode) {
  const std::string name = GetParam();
  const Json meta = read_json_file(st6(name) / "reference.json");
  testing::Reference ref(st6(name) / "reference.safetensors");
  auto dir = testing::scratch_dir("st6_cli_" + name);
  ASSERT_GE(meta["cases"].size(), 2u);
  std::vector<std::vector<float>> outputs;
  for (const Json& c : meta["cases"]) {
    const std::string what = c["name"];
    SCOPED_TRACE(what);
    const auto out = dir / (what + ".csv");
    auto r = run_cli(run_args(name, out, flags_of(c["encode_args"])));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto want = ref.floats("embeddings_" + what);
    EXPECT_LE(worst_difference(out, want), kTolerance);
    // Two replicas and the static schedule change nothing.
    const auto out2 = dir / (what + "_static.csv");
    r = run_cli(run_args(name, out2, [&] {
      auto f = flags_of(c["encode_args"]);
      f.insert(f.end(),
               {"--replicas", "2", "--schedule", "static", "--batch-size", "3", "--quiet"});
      return f;
    }()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_LE(worst_difference(out2, want), kTolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, St6Cli,
                         ::testing::Values("st6_bert_prompts", "st6_roberta_mean",
                                           "st6_xlmr_last_weighted_max", "st6_mpnet_mean_norm",
                                           "st6_modernbert_prompts", "st6_qwen3_embedding",
                                           "st6_embeddinggemma",
                                           // saved by 3.3.1 (tools/gen_st_fixtures.py): the
                                           // prompt stripped with the text, CLS = token 0
                                           "roberta_prompts_cls_mean"),
                         [](const auto& info) { return info.param; });

// What a wrong implementation of each 6.x rule would give differs from encode() by far more than
// the tolerance, so the test above can fail: the prompt pooled (include_prompt ignored), the
// texts stripped as 3.x did, no prompt at all.
TEST(St6Cli, EachRuleMatters) {
  auto dir = testing::scratch_dir("st6_rules");
  testing::Reference bert(st6("st6_bert_prompts") / "reference.safetensors");
  // No default prompt: --prompt "" is encode(prompt="") (no prompt).
  auto r = run_cli(run_args("st6_bert_prompts", dir / "none.csv", {"--prompt", ""}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(worst_difference(dir / "none.csv", bert.floats("embeddings_default")), 1e-2);
  // The empty 'document' prompt is no prompt.
  EXPECT_LE(worst_difference(dir / "none.csv", bert.floats("embeddings_prompt_name_document")),
            kTolerance);
  // RoBERTa's texts with edge spaces are not stripped by 6.x: the rows with edge whitespace differ
  // from what a stripped text gives.
  testing::Reference roberta(st6("st6_roberta_mean") / "reference.safetensors");
  const fs::path model = dir / "st6_roberta_mean";
  fs::copy(st6("st6_roberta_mean"), model, fs::copy_options::recursive);
  const fs::path config = model / "config_sentence_transformers.json";
  auto saved_by = [&](const char* version) {
    Json j = read_json_file(config);
    j["__version__"]["sentence_transformers"] = version;
    std::ofstream(config, std::ios::trunc) << j.dump(2);
  };
  saved_by("5.4.0");  // the first version that no longer strips
  r = run_cli({"run", model.string(), "--input", (model / "input.csv").string(), "--output",
               (dir / "five.csv").string(), "--precision", "fp32", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(worst_difference(dir / "five.csv", roberta.floats("embeddings_default")), kTolerance);
  saved_by("5.3.0");  // the last that did
  r = run_cli({"run", model.string(), "--input", (model / "input.csv").string(), "--output",
               (dir / "three.csv").string(), "--precision", "fp32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("texts stripped of edge whitespace"), std::string::npos) << r.err;
  EXPECT_GT(worst_difference(dir / "three.csv", roberta.floats("embeddings_default")), 1e-3);
}

TEST(St6Cli, InspectAndReportSayThePromptAndWhereItComesFrom) {
  const std::string model = st6("st6_bert_prompts").string();
  auto r = run_cli({"inspect", model});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line :
       {"pooling          cls+mean (1_Pooling/config.json)\n",
        "prompt \"query: \" (config_sentence_transformers.json: default_prompt_name 'query')",
        "left out of the pooling", "saved by         transformers 5.", "sentence-transformers 6.",
        "max length       24 tokens (tokenizer_config.json: model_max_length)"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  }
  r = run_cli({"inspect", model, "--json", "--prompt-name", "doc"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["text"]["prompt"]["value"], "passage: ");
  EXPECT_EQ(j["text"]["prompt"]["source"],
            "config_sentence_transformers.json: prompts.doc (--prompt-name)");
  EXPECT_GT(j["text"]["prompt"]["tokens_not_pooled"].get<int>(), 1);
  EXPECT_EQ(j["saved_by"]["dtype"], "float32");  // config.json's "dtype" (transformers 5)

  auto dir = testing::scratch_dir("st6_report");
  r = run_cli(
      run_args("st6_bert_prompts", dir / "o.csv",
               {"--prompt", "Represent: ", "--report", (dir / "report.json").string(), "--quiet"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json report = read_json_file(dir / "report.json");
  EXPECT_EQ(report["text"]["prompt"]["value"], "Represent: ");
  EXPECT_EQ(report["text"]["prompt"]["source"], "--prompt");
  EXPECT_EQ(report["text"]["tokenizer_compat"]["value"], "transformers5");
  EXPECT_EQ(report["text"]["strip_text"], false);
}

// --truncate-dim outside the embedding's width, or on another task, or with several outputs, is
// refused before any row, by the flag.
TEST(St6Cli, TruncateDimRefusals) {
  auto dir = testing::scratch_dir("st6_truncate_refusals");
  struct Case {
    std::vector<std::string> flags;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--truncate-dim", "33"}, "--truncate-dim 33 is not in [1, 32]"},
      {{"--truncate-dim", "0"}, "--truncate-dim"},
      {{"--truncate-dim", "8", "--outputs", "mean,normalized"}, "--truncate-dim with --outputs"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.message);
    auto r = run_cli(run_args("st6_qwen3_embedding", dir / "o.csv", c.flags));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "o.csv"));
  }
}

TEST(St6Cli, PromptRefusals) {
  auto dir = testing::scratch_dir("st6_refusals");
  struct Case {
    std::vector<std::string> flags;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--prompt-name", "nope"}, "--prompt-name 'nope'"},
      {{"--prompt-name", "doc", "--prompt", "x"}, "--prompt and --prompt-name both given"},
      // A prompt left out of the pooling is in a row's first window only.
      {{"--long-input", "chunk"}, "--long-input chunk with a prompt left out of the pooling"},
      // No room for a text after the prompt.
      {{"--max-len", "4"}, "leaves no room for a text"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.message);
    auto r = run_cli(run_args("st6_bert_prompts", dir / "o.csv", c.flags));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "o.csv"));
  }
  // A prompt is text: rows that carry ids are refused, not silently left without it.
  {
    std::ofstream(dir / "ids.jsonl") << R"({"id": "a", "input_ids": [2, 40, 41, 3]})"
                                     << "\n";
    auto r = run_cli({"run", st6("st6_bert_prompts").string(), "--input",
                      (dir / "ids.jsonl").string(), "--output", (dir / "o.csv").string()});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("ids.jsonl:1: the row carries input_ids, but a prompt is in force"),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(dir / "o.csv"));
    r = run_cli({"run", st6("st6_bert_prompts").string(), "--input", (dir / "ids.jsonl").string(),
                 "--output", (dir / "o.csv").string(), "--prompt", "", "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  // The names are listed.
  auto r = run_cli(run_args("st6_bert_prompts", dir / "o.csv", {"--prompt-name", "nope"}));
  EXPECT_NE(r.err.find("'doc', 'document', 'query'"), std::string::npos) << r.err;
}

TEST(St6Cli, ResumeRefusesAnotherPrompt) {
  auto dir = testing::scratch_dir("st6_resume");
  const fs::path shards = dir / "shards";
  auto args = [&](std::vector<std::string> extra) {
    auto a = run_args(
        "st6_bert_prompts", dir / "o.csv",
        {"--quiet", "--batch-tokens", "16", "--replicas", "1", "--shards-dir", shards.string()});
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  testing::CliOptions crash;
  crash.env = {"MCINFER_FAULT=shard-write:3"};
  ASSERT_EQ(run_cli(args({}), crash).exit_code, 137);
  auto r = run_cli(args({"--resume", "--prompt-name", "doc"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("flags.prompt: was \"query: \", now \"passage: \""), std::string::npos)
      << r.err;
  r = run_cli(args({"--resume", "--prompt", ""}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("flags.prompt: was \"query: \", now absent"), std::string::npos) << r.err;
  // The same prompt resumes, and gives encode()'s values.
  r = run_cli(args({"--resume"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  testing::Reference ref(st6("st6_bert_prompts") / "reference.safetensors");
  EXPECT_LE(worst_difference(dir / "o.csv", ref.floats("embeddings_default")), kTolerance);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    out.push_back(text.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// Tokenizer directories as transformers 5 saves them, and an XLM-R directory whose tokenizer.json
// is older than its config.json: auto follows config.json's transformers_version.
TEST(Tf5Tokenize, TokenizerDirectoriesGiveTransformers5Ids) {
  for (const char* name : {"tf5_wordpiece_no_config", "tf5_unigram_no_config", "tf5_bpe_no_config",
                           "tf5_xlmr_old_tokenizer_json"}) {
    SCOPED_TRACE(name);
    const fs::path dir = testing::fixture(std::string("tokenizer_dirs/") + name);
    auto r = run_cli({"tokenize", dir.string(), "--max-len", "32"}, (dir / "texts.txt").string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto got = lines_of(r.out), want = lines_of(testing::read_file(dir / "expected.jsonl"));
    ASSERT_EQ(got.size(), want.size());
    ASSERT_GE(want.size(), 10u);
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_EQ(Json::parse(got[i]), Json::parse(want[i])) << "line " << i;
  }
  const fs::path dir = testing::fixture("tokenizer_dirs/tf5_xlmr_old_tokenizer_json");
  auto r = run_cli({"tokenize", dir.string(), "--max-len", "32"}, (dir / "texts.txt").string());
  EXPECT_NE(r.err.find("as transformers 5 builds it (auto: config.json transformers_version 5."),
            std::string::npos)
      << r.err;
  // The file's pipeline on request: what tokenizers.Tokenizer.from_file gives.
  r = run_cli({"tokenize", dir.string(), "--max-len", "32", "--tokenizer-compat", "file"},
              (dir / "texts.txt").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto got = lines_of(r.out),
             want = lines_of(testing::read_file(dir / "expected_file.jsonl"));
  ASSERT_EQ(got.size(), want.size());
  std::size_t differ = 0;
  const auto v5 = lines_of(testing::read_file(dir / "expected.jsonl"));
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(Json::parse(got[i]), Json::parse(want[i])) << "line " << i;
    differ += want[i] != v5[i];
  }
  EXPECT_GE(differ, 3u);  // else this directory tests nothing
  EXPECT_NE(r.err.find("as its files say (--tokenizer-compat)"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mcinfer
