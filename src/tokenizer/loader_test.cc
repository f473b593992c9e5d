// Which files load() picks, what it reads from tokenizer_config.json, and that bad tokenizer
// files fail with a message naming the file and the field.

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "support/paths.h"
#include "tokenizer/tokenizer.h"

namespace mcinfer::tokenizer {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string load_error(const fs::path& dir) {
  try {
    Tokenizer::load(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Loader, KindsPadIdsAndMaxLength) {
  struct Case {
    const char* variant;
    const char* kind;
    std::int32_t pad;
  };
  for (const Case& c : {Case{"minilm_json", "wordpiece", 0}, Case{"minilm_vocab", "wordpiece", 0},
                        Case{"wp_cased_json", "wordpiece", 0}, Case{"bpe_json", "bpe", 1},
                        Case{"bpe_files", "bpe", 1}, Case{"unigram_json", "unigram", 1},
                        Case{"unigram_spm", "unigram", 1}}) {
    auto tok = Tokenizer::load(testing::fixture(std::string("tokenizer/models/") + c.variant));
    EXPECT_EQ(tok->kind(), c.kind) << c.variant;
    EXPECT_EQ(tok->pad_id(), c.pad) << c.variant;
    EXPECT_EQ(tok->model_max_length(), std::optional<std::size_t>(512)) << c.variant;
  }
}

TEST(Loader, UnsetModelMaxLengthIsNone) {
  auto dir = testing::scratch_dir("tok_maxlen");
  fs::copy(testing::fixture("tokenizer/models/wp_uncased_vocab/vocab.txt"), dir / "vocab.txt");
  write(dir / "tokenizer_config.json", R"({"model_max_length": 1000000000000000019884624838656})");
  EXPECT_EQ(Tokenizer::load(dir)->model_max_length(), std::nullopt);
}

TEST(Loader, VocabTxtHonoursConfigFlags) {
  auto dir = testing::scratch_dir("tok_cased_vocab");
  write(dir / "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nHello\n");
  write(dir / "tokenizer_config.json", R"({"do_lower_case": false})");
  auto tok = Tokenizer::load(dir);
  EXPECT_EQ(tok->encode("Hello hello HELLO", std::nullopt, 0).ids,
            (std::vector<std::int32_t>{2, 6, 5, 1, 3}));
  write(dir / "tokenizer_config.json", R"({"do_lower_case": true})");
  EXPECT_EQ(Tokenizer::load(dir)->encode("Hello HELLO", std::nullopt, 0).ids,
            (std::vector<std::int32_t>{2, 5, 5, 3}));
}

TEST(Loader, TokenizerJsonWinsOverOtherFiles) {
  auto dir = testing::scratch_dir("tok_both");
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
    fs::copy(testing::fixture(std::string("tokenizer/models/unigram_json/") + f), dir / f);
  }
  write(dir / "vocab.txt", "garbage\n");
  EXPECT_EQ(Tokenizer::load(dir)->kind(), "unigram");
}

TEST(Loader, BadFilesNameFileAndField) {
  auto dir = testing::scratch_dir("tok_bad");
  EXPECT_NE(load_error(dir).find("no tokenizer files"), std::string::npos);
  EXPECT_NE(load_error(dir / "missing").find("not a directory"), std::string::npos);

  write(dir / "tokenizer.json", "{ not json");
  std::string e = load_error(dir);
  EXPECT_NE(e.find("tokenizer.json: invalid JSON"), std::string::npos) << e;

  write(dir / "tokenizer.json", R"({"model": {"type": "WordLevel", "vocab": {}}})");
  e = load_error(dir);
  EXPECT_NE(
      e.find("tokenizer.json: field 'model.type': unknown or unsupported model type 'WordLevel'"),
      std::string::npos)
      << e;

  write(dir / "tokenizer.json",
        R"({"normalizer": {"type": "Sequence", "normalizers": [{"type": "Foo"}]},
            "model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}})");
  e = load_error(dir);
  EXPECT_NE(
      e.find(
          "field 'normalizer.normalizers[0].type': unknown or unsupported normalizer type 'Foo'"),
      std::string::npos)
      << e;

  write(dir / "tokenizer.json", R"({"model": {"type": "WordPiece", "unk_token": "[UNK]"}})");
  e = load_error(dir);
  EXPECT_NE(e.find("field 'model.vocab': missing"), std::string::npos) << e;

  write(dir / "tokenizer.json",
        R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})");
  e = load_error(dir);
  EXPECT_NE(e.find("merge 1 ('a b'): 'b' is not in the vocabulary"), std::string::npos) << e;

  write(dir / "tokenizer.json", R"({"model": {"type": "Unigram", "vocab": [["a", "x"]]}})");
  e = load_error(dir);
  EXPECT_NE(e.find("field 'model.vocab[0][1]': expected a number, got string"), std::string::npos)
      << e;

  write(dir / "tokenizer.json",
        R"({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "x"}},
            "model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}})");
  e = load_error(dir);
  EXPECT_NE(e.find("field 'pre_tokenizer.type': unknown or unsupported pre-tokenizer type 'Split'"),
            std::string::npos)
      << e;
  fs::remove(dir / "tokenizer.json");

  write(dir / "vocab.json", R"({"a": 0})");
  e = load_error(dir);
  EXPECT_NE(e.find("merges.txt: missing"), std::string::npos) << e;
  write(dir / "merges.txt", "#version: 0.2\na b c\n");
  e = load_error(dir);
  EXPECT_NE(e.find("merges.txt: line 2: expected two tokens"), std::string::npos) << e;
  fs::remove(dir / "vocab.json");
  fs::remove(dir / "merges.txt");

  write(dir / "sentencepiece.bpe.model", "definitely not a protobuf");
  e = load_error(dir);
  EXPECT_NE(e.find("sentencepiece.bpe.model: malformed model proto"), std::string::npos) << e;
  // Found by fuzz_tokenizer_files: a piece holding NUL bytes made libsentencepiece throw its own
  // exception type out of Load().
  std::string crash = testing::read_file(
      testing::source_dir() / "tests/fuzz/corpus/fuzz_tokenizer_files/regress_spm_nul_piece");
  write(dir / "sentencepiece.bpe.model", crash.substr(1));
  e = load_error(dir);
  EXPECT_NE(e.find("holds a NUL byte"), std::string::npos) << e;
  fs::remove(dir / "sentencepiece.bpe.model");

  write(dir / "vocab.txt", "hello\n");
  e = load_error(dir);
  EXPECT_NE(e.find("vocab.txt: field 'model.unk_token': '[UNK]' is not in the vocabulary"),
            std::string::npos)
      << e;
  write(dir / "vocab.txt", "[UNK]\n\xff\n");
  e = load_error(dir);
  EXPECT_NE(e.find("vocab.txt: not valid UTF-8"), std::string::npos) << e;
}

}  // namespace
}  // namespace mcinfer::tokenizer
