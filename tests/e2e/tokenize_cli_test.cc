// `mcinfer tokenize` prints exactly what the tokenizer library produces (which parity_test checks
// against Hugging Face), for stdin lines, pairs, and rows of an input file.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/json.h"
#include "support/cli.h"
#include "support/reference.h"
#include "tokenizer/tokenizer.h"

namespace mcinfer {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> corpus_lines(std::size_t n) {
  std::ifstream in(testing::fixture("tokenizer/corpus.txt"), std::ios::binary);
  std::vector<std::string> lines;
  std::string line;
  while (lines.size() < n && std::getline(in, line)) {
    if (line.find('\t') == std::string::npos && line.find('\r') == std::string::npos)
      lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> output_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

std::string ids_json(const tokenizer::Encoding& e) { return Json(e.ids).dump(); }

TEST(TokenizeCli, StdinLinesAndPairsMatchTheLibrary) {
  auto dir = testing::scratch_dir("tokenize_cli");
  auto lines = corpus_lines(300);
  for (const char* variant : {"minilm_json", "unigram_spm", "bpe_files"}) {
    SCOPED_TRACE(variant);
    const fs::path model = testing::fixture(std::string("tokenizer/models/") + variant);
    auto tok = tokenizer::Tokenizer::load(model);
    std::ofstream(dir / "in.txt", std::ios::binary | std::ios::trunc) << [&] {
      std::string all;
      for (const auto& l : lines) all += l + "\n";
      return all;
    }();
    auto r = testing::run_cli({"tokenize", model.string(), "--max-len", "40"},
                              (dir / "in.txt").string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto got = output_lines(r.out);
    ASSERT_EQ(got.size(), lines.size());
    for (std::size_t i = 0; i < lines.size(); ++i) {
      ASSERT_EQ(got[i], ids_json(tok->encode(lines[i], std::nullopt, 40))) << "line " << i;
    }
    // Pairs: two texts per line, tab-separated, truncated longest-first.
    std::string pairs;
    for (std::size_t i = 0; i + 1 < 100; i += 2) pairs += lines[i] + "\t" + lines[i + 1] + "\n";
    std::ofstream(dir / "pairs.txt", std::ios::binary | std::ios::trunc) << pairs;
    r = testing::run_cli({"tokenize", model.string(), "--pair", "--max-len", "24"},
                         (dir / "pairs.txt").string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    got = output_lines(r.out);
    ASSERT_EQ(got.size(), 50u);
    for (std::size_t i = 0; i < 50; ++i) {
      ASSERT_EQ(got[i], ids_json(tok->encode(lines[2 * i], lines[2 * i + 1], 24))) << "pair " << i;
    }
  }
}

TEST(TokenizeCli, InputFileRowsAndTokens) {
  auto dir = testing::scratch_dir("tokenize_cli_input");
  const fs::path model = testing::fixture("tokenizer/models/minilm_vocab");
  std::ofstream(dir / "in.csv") << "id,text\n1,\"Hello, world!\"\n2,\"multi\nline\"\n";
  auto r = testing::run_cli(
      {"tokenize", model.string(), "--input", (dir / "in.csv").string(), "--tokens"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "[\"[CLS]\",\"hello\",\",\",\"world\",\"!\",\"[SEP]\"]\n[\"[CLS]\",\"multi\",\"line\","
            "\"[SEP]\"]\n");
  std::ofstream(dir / "bad.csv") << "id,text\n1,a,b\n";
  r = testing::run_cli({"tokenize", model.string(), "--input", (dir / "bad.csv").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad.csv:2:"), std::string::npos) << r.err;
}

// tokenize's input flags come from the option table, as run's: other columns and a format the
// extension does not say are read, and a bad value is refused in run's words.
TEST(TokenizeCli, InputFlagsParseAndRefuseAsRunDoes) {
  auto dir = testing::scratch_dir("tokenize_cli_flags");
  const fs::path model = testing::fixture("tokenizer/models/minilm_vocab");
  std::ofstream(dir / "rows.txt") << "{\"q\": \"Hello\", \"p\": \"world\"}\n";
  auto r = testing::run_cli({"tokenize", model.string(), "--input", (dir / "rows.txt").string(),
                             "--format", "jsonl", "--text-col", "q", "--text-pair-col", "p",
                             "--pair", "--tokens"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[\"[CLS]\",\"hello\",\"[SEP]\",\"world\",\"[SEP]\"]\n");
  const std::vector<std::vector<std::string>> bad = {
      {"--format", "tsv"}, {"--max-len", "-3"}, {"--stride", "x"}};
  for (const auto& flag : bad) {
    SCOPED_TRACE(flag[0]);
    std::vector<std::string> tokenize = {"tokenize", model.string()};
    std::vector<std::string> run = {"run",    model.string(), "--input",
                                    "in.csv", "--output",     "out.csv"};
    tokenize.insert(tokenize.end(), flag.begin(), flag.end());
    run.insert(run.end(), flag.begin(), flag.end());
    const auto t = testing::run_cli(tokenize, "");
    const auto w = testing::run_cli(run);
    EXPECT_EQ(t.exit_code, 2) << t.err;
    EXPECT_EQ(w.exit_code, 2) << w.err;
    const std::string first_line = w.err.substr(0, w.err.find('\n'));
    EXPECT_NE(first_line.find(flag[0]), std::string::npos) << w.err;
    EXPECT_EQ(t.err.substr(0, t.err.find('\n')), first_line);
  }
}

// What AutoTokenizer.save_pretrained writes (no config.json), with a config.json that has only
// model_type, or one without the model's dimensions: tokenizing needs none of them. Ids against
// the same AutoTokenizer (tools/gen_st_fixtures.py, truncation=True, max_length=32).
TEST(TokenizeCli, TokenizerDirectoriesNeedNoModelDimensions) {
  for (const char* name :
       {"wordpiece_no_config", "wordpiece_model_type_only", "bpe_no_hidden_size"}) {
    SCOPED_TRACE(name);
    const fs::path dir = testing::fixture(std::string("tokenizer_dirs/") + name);
    auto r = testing::run_cli({"tokenize", dir.string(), "--max-len", "32"},
                              (dir / "texts.txt").string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto got = output_lines(r.out);
    auto want = output_lines(testing::read_file(dir / "expected.jsonl"));
    ASSERT_EQ(got.size(), want.size());
    ASSERT_GE(want.size(), 10u);
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_EQ(Json::parse(got[i]), Json::parse(want[i])) << "line " << i;
    // Running needs the whole config, and says what is missing.
    for (const std::vector<std::string>& cmd :
         {std::vector<std::string>{"inspect", dir.string()},
          std::vector<std::string>{"run", dir.string(), "--input", (dir / "texts.txt").string(),
                                   "--format", "csv", "--output",
                                   (testing::scratch_dir("tokdir") / "o.csv").string()}}) {
      r = testing::run_cli(cmd);
      EXPECT_EQ(r.exit_code, 1) << cmd[0];
      const bool no_config = std::string(name) == "wordpiece_no_config";
      const std::string what =
          no_config
              ? "no config.json"
              : (dir / "config.json").string() + ": field '" +
                    (std::string(name) == "bpe_no_hidden_size" ? "hidden_size" : "vocab_size") +
                    "': missing";
      EXPECT_NE(r.err.find(what), std::string::npos) << cmd[0] << ": " << r.err;
    }
  }
}

// For a sentence-transformers model, tokenize strips each text as run (and sentence-transformers)
// does: the ids are those SentenceTransformer.tokenize fed the model.
TEST(TokenizeCli, SentenceTransformersTextsAreStripped) {
  for (const char* name : {"roberta_meansqrt_dense2", "bert_cls_dense"}) {
    SCOPED_TRACE(name);
    const fs::path dir = testing::fixture(std::string("st/") + name);
    auto r = testing::run_cli({"tokenize", dir.string(), "--input", (dir / "input.csv").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    testing::Reference ref(dir / "reference.safetensors");
    auto shape = ref.shape("input_ids");
    auto ids = ref.ints("input_ids"), mask = ref.ints("attention_mask");
    auto got = output_lines(r.out);
    ASSERT_EQ(static_cast<std::int64_t>(got.size()), shape[0]);
    for (std::int64_t i = 0; i < shape[0]; ++i) {
      std::vector<std::int32_t> want;
      for (std::int64_t j = 0; j < shape[1]; ++j)
        if (mask[i * shape[1] + j]) want.push_back(ids[i * shape[1] + j]);
      EXPECT_EQ(got[i], Json(want).dump()) << "row " << i;
    }
  }
}

TEST(TokenizeCli, MaxLenBelowTwoIsRefusedNotTheDefault) {
  const fs::path with_config = testing::fixture("text/roberta_cls");
  const fs::path tokenizer_only = testing::fixture("tokenizer/models/minilm_vocab");
  for (const char* n : {"0", "1"}) {
    SCOPED_TRACE(n);
    auto r = testing::run_cli({"tokenize", with_config.string(), "--max-len", n});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(fmt::format("--max-len {} is outside [2, ", n)), std::string::npos)
        << r.err;
    r = testing::run_cli({"tokenize", tokenizer_only.string(), "--max-len", n});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(fmt::format("--max-len {} is below 2", n)), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace mcinfer
