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
        R"({"pre_tokenizer": {"type": "Digits", "individual_digits": true},
            "model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}})");
  e = load_error(dir);
  EXPECT_NE(
      e.find("field 'pre_tokenizer.type': unknown or unsupported pre-tokenizer type 'Digits'"),
      std::string::npos)
      << e;
  write(dir / "tokenizer.json",
        R"({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "x"}},
            "model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}})");
  e = load_error(dir);
  EXPECT_NE(e.find("field 'pre_tokenizer.behavior': missing"), std::string::npos) << e;
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

std::string load_error(const fs::path& dir, Compat compat) {
  try {
    Tokenizer::load(dir, compat);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A copy of a DeBERTa fixture directory to alter.
fs::path deberta_copy(const std::string& variant, const std::string& name) {
  auto dir = testing::scratch_dir(name);
  for (const auto& f : fs::directory_iterator(testing::fixture("tokenizer/models/" + variant))) {
    fs::copy(f.path(), dir / f.path().filename());
  }
  return dir;
}

TEST(Loader, DebertaSpmModel) {
  // tools/gen_deberta_tokenizers.py checks that transformers gives [MASK] the id after the
  // 3,000 pieces; [CLS] 1 and [SEP] 2 are the pieces' own.
  for (Compat compat : {Compat::kFile, Compat::kTransformers5}) {
    for (const char* variant : {"deberta_spm", "deberta_v3_spm"}) {
      auto tok =
          Tokenizer::load(testing::fixture(std::string("tokenizer/models/") + variant), compat);
      EXPECT_EQ(tok->kind(), "unigram") << variant;
      EXPECT_EQ(tok->pad_id(), 0) << variant;
      EXPECT_EQ(tok->model_max_length(), std::nullopt) << variant;
      EXPECT_EQ(tok->special_tokens(false), 2u);
      EXPECT_EQ(tok->special_tokens(true), 3u);
      EXPECT_EQ(tok->encode("[MASK]", std::nullopt, 0).ids, (std::vector<std::int32_t>{1, 3000, 2}))
          << variant;
    }
  }
}

// Without tokenizer_class, config.json's model_type names the class whose pipeline
// transformers 5 builds, as it does for XLM-R.
TEST(Loader, DebertaJsonRebuiltByModelType) {
  auto dir = deberta_copy("deberta_tf4_json", "tok_deberta_model_type");
  fs::remove(dir / "tokenizer_config.json");
  fs::remove(dir / "special_tokens_map.json");
  // A trailing U+200E: the charsmap removes it; transformers 4 strips before, 5 after.
  const std::string text = "abc\xE2\x80\x8E";
  auto file = Tokenizer::load(dir, Compat::kFile)->encode(text, std::nullopt, 0).ids;
  auto plain = Tokenizer::load(dir, Compat::kTransformers5)->encode(text, std::nullopt, 0).ids;
  EXPECT_EQ(plain, file);  // no class named: the file's pipeline either way
  write(dir / "config.json", R"({"model_type": "deberta-v2"})");
  auto tf5 = Tokenizer::load(dir, Compat::kTransformers5)->encode(text, std::nullopt, 0).ids;
  auto reference =
      Tokenizer::load(testing::fixture("tokenizer/models/deberta_tf4_json"), Compat::kTransformers5)
          ->encode(text, std::nullopt, 0)
          .ids;
  EXPECT_EQ(tf5, reference);
  EXPECT_EQ(tf5.size() + 1, file.size());
}

TEST(Loader, BadDebertaFilesNameFileAndField) {
  auto dir = deberta_copy("deberta_spm", "tok_deberta_bad");
  const std::string model = testing::read_file(dir / "spm.model");
  // A trailing TrainerSpec merges into the first (protobuf's rule for a repeated message field):
  // model_type BPE.
  write(dir / "spm.model", model + std::string("\x12\x02\x18\x02", 4));
  std::string e = load_error(dir, Compat::kFile);
  EXPECT_NE(e.find("spm.model: trainer_spec.model_type 2 is not Unigram (1), which "
                   "DebertaV2Tokenizer needs"),
            std::string::npos)
      << e;
  // unk_id 5000 (field 40), beyond the pieces: transformers 4 takes the id from there.
  write(dir / "spm.model", model + std::string("\x12\x04\xC0\x02\x88\x27", 6));
  e = load_error(dir, Compat::kFile);
  EXPECT_NE(e.find("spm.model: trainer_spec.unk_id: unknown token id 5000 is not one of the "
                   "3000 pieces"),
            std::string::npos)
      << e;
  write(dir / "spm.model", model);

  dir = deberta_copy("deberta_lower_punct_json", "tok_deberta_bad_json");
  std::string json = testing::read_file(dir / "tokenizer.json");
  const std::string isolated = R"("behavior":"Isolated")";
  ASSERT_NE(json.find(isolated), std::string::npos);
  write(dir / "tokenizer.json", json.substr(0, json.find(isolated)) + R"("behavior":"Removed")" +
                                    json.substr(json.find(isolated) + isolated.size()));
  e = load_error(dir, Compat::kFile);
  EXPECT_NE(e.find("tokenizer.json: field 'pre_tokenizer.pretokenizers[0].behavior': behavior "
                   "'Removed' is not supported"),
            std::string::npos)
      << e;
  write(dir / "tokenizer.json", json);
  write(dir / "tokenizer_config.json",
        R"({"tokenizer_class": "DebertaV2Tokenizer", "unk_token": "<none>", "unk_id": 99999})");
  e = load_error(dir, Compat::kTransformers5);
  EXPECT_NE(e.find("tokenizer_config.json: field 'unk_id': unknown token id 99999 is not one of "
                   "the 3000 pieces"),
            std::string::npos)
      << e;

  write(dir / "tokenizer.json",
        testing::read_file(testing::fixture("tokenizer/models/bpe_json/tokenizer.json")));
  write(dir / "tokenizer_config.json", R"({"tokenizer_class": "DebertaV2TokenizerFast"})");
  e = load_error(dir, Compat::kTransformers5);
  EXPECT_NE(e.find("tokenizer.json: field 'model.type': 'BPE': DebertaV2Tokenizer needs a "
                   "Unigram model"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace mcinfer::tokenizer
