// Exact parity with Hugging Face on the committed corpus, for every committed tokenizer:
// tools/gen_tokenizer_fixtures.py wrote the ids transformers/tokenizers produce.

#include <fmt/format.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "core/json.h"
#include "support/paths.h"
#include "tokenizer/tokenizer.h"

namespace mcinfer::tokenizer {
namespace {

using testing::fixture;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t end = s.find(sep, start);
    if (end == std::string::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
}

std::vector<std::string> read_lines(const std::filesystem::path& path) {
  std::string data = testing::read_file(path);
  EXPECT_FALSE(data.empty()) << path;
  if (!data.empty() && data.back() == '\n') data.pop_back();
  return split(data, '\n');
}

std::string from_hex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// The fixture's compact ids: base 32, last digit from the first 32 symbols of the alphabet.
std::vector<std::int32_t> decode_ids(const std::string& s) {
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::vector<std::int32_t> out;
  std::int64_t acc = 0;
  for (char c : s) {
    auto v = static_cast<std::int64_t>(kAlphabet.find(c));
    EXPECT_GE(v, 0) << "bad id character " << c;
    if (v >= 32) {
      acc = acc * 32 + (v - 32);
    } else {
      out.push_back(static_cast<std::int32_t>(acc * 32 + v));
      acc = 0;
    }
  }
  return out;
}

std::string show(const std::vector<std::int32_t>& ids) {
  std::ostringstream o;
  o << '[';
  for (std::size_t i = 0; i < ids.size(); ++i) o << (i ? " " : "") << ids[i];
  o << ']';
  return o.str();
}

struct Corpus {
  std::vector<std::string> lines;
  std::vector<std::string> byte_cases;
};

const Corpus& corpus() {
  static const Corpus c = [] {
    Corpus c;
    c.lines = read_lines(fixture("tokenizer/corpus.txt"));
    for (const std::string& h : read_lines(fixture("tokenizer/byte_cases.txt"))) {
      c.byte_cases.push_back(from_hex(h));
    }
    return c;
  }();
  return c;
}

// The expected set of a variant: tokenizer/expected/<set>.tsv, from `manifest` (variants.tsv, or
// transformers5/variants.tsv for the ids transformers 5 gives).
std::string expected_set(const std::string& variant,
                         const std::string& manifest = "tokenizer/expected/variants.tsv") {
  for (const std::string& line : read_lines(fixture(manifest))) {
    if (line.empty() || line[0] == '#') continue;
    auto f = split(line, '\t');
    if (f.size() == 2 && f[0] == variant) return f[1];
  }
  ADD_FAILURE() << variant << " is not in " << manifest;
  return variant;
}

struct Tally {
  std::map<char, std::size_t> checked, failed;
  std::vector<std::string> reports;
  void record(char kind, bool ok, const std::string& what) {
    ++checked[kind];
    if (ok) return;
    ++failed[kind];
    if (reports.size() < 25) reports.push_back(what);
  }
};

// The records of an expected set. A set whose first record is "@base<TAB><set>" holds only the
// records that differ from that set's (tools/gen_deberta_tokenizers.py writes them so): each
// replaces the base record of the same kind and key (its first field).
std::vector<std::string> set_records(const std::string& set, int depth = 0) {
  std::vector<std::string> own;
  std::optional<std::string> base;
  for (const std::string& rec : read_lines(fixture("tokenizer/expected/" + set + ".tsv"))) {
    if (rec.empty() || rec[0] == '#') continue;
    if (rec.starts_with("@base\t") && own.empty() && !base) {
      base = rec.substr(6);
      continue;
    }
    own.push_back(rec);
  }
  if (!base) return own;
  if (depth >= 4) {
    ADD_FAILURE() << set << ": chain of @base sets too long";
    return own;
  }
  std::vector<std::string> out = set_records(*base, depth + 1);
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto f = split(out[i], '\t');
    if (f.size() >= 2) index[{f[0], f[1]}] = i;
  }
  for (const std::string& rec : own) {
    auto f = split(rec, '\t');
    auto it = f.size() >= 2 ? index.find({f[0], f[1]}) : index.end();
    if (it == index.end()) {
      ADD_FAILURE() << set << ": record without a counterpart in " << *base << ": " << rec;
      continue;
    }
    out[it->second] = rec;
  }
  return out;
}

// Every record of an expected set against the tokenizer; the count of mismatches.
std::size_t check_records(const std::string& variant, const Tokenizer& tok0,
                          const std::string& set) {
  const Tokenizer* tok = &tok0;
  const Corpus& c = corpus();
  EXPECT_GE(c.lines.size(), 5000u);
  Tally t;
  for (const std::string& rec : set_records(set)) {
    auto f = split(rec, '\t');
    const char kind = f[0][0];
    if (kind == 'S' || kind == 'T') {
      std::size_t line = std::stoul(f[1]);
      std::size_t max_len = kind == 'T' ? std::stoul(f[2]) : 0;
      auto want = decode_ids(f[kind == 'T' ? 3 : 2]);
      auto got = tok->encode(c.lines.at(line), std::nullopt, max_len).ids;
      t.record(kind, got == want,
               fmt::format("{} line {} max_length {}: expected {} got {}", kind, line + 1, max_len,
                           show(want), show(got)));
    } else if (kind == 'P') {
      std::size_t a = std::stoul(f[1]), b = std::stoul(f[2]), max_len = std::stoul(f[3]);
      auto want = decode_ids(f[4]);
      std::vector<std::int32_t> want_types;
      for (char ch : f[5]) want_types.push_back(ch - '0');
      Encoding e = tok->encode(c.lines.at(a), c.lines.at(b), max_len);
      t.record(kind, e.ids == want && e.type_ids == want_types,
               fmt::format("pair lines {}+{} max_length {}: expected {} {} got {} {}", a + 1, b + 1,
                           max_len, show(want), f[5], show(e.ids), show(e.type_ids)));
    } else if (kind == 'B') {
      std::size_t k = std::stoul(f[1]);
      std::size_t invalid = std::stoul(f[2]);
      auto want = decode_ids(f[3]);
      Encoding e = tok->encode(c.byte_cases.at(k), std::nullopt, 0);
      t.record(kind, e.ids == want && e.invalid_utf8 == invalid,
               fmt::format("byte case {}: expected {} ({} invalid) got {} ({} invalid)", k + 1,
                           show(want), invalid, show(e.ids), e.invalid_utf8));
    } else if (kind == 'K') {
      std::size_t line = std::stoul(f[1]);
      Json want = parse_json(f[2], "expected tokens");
      auto got = tok->tokens(tok->encode(c.lines.at(line), std::nullopt, 0));
      t.record(kind, Json(got) == want,
               fmt::format("tokens of line {}: expected {} got {}", line + 1, want.dump(),
                           Json(got).dump()));
    }
  }
  std::size_t failures = 0;
  for (const auto& [kind, n] : t.checked) {
    std::size_t bad = t.failed[kind];
    failures += bad;
    std::cout << variant << ": " << kind << " " << n << " checked, " << bad << " mismatches\n";
  }
  EXPECT_GE(t.checked['S'], c.lines.size());
  for (const std::string& r : t.reports) ADD_FAILURE() << variant << ": " << r;
  return failures;
}

class Parity : public ::testing::TestWithParam<std::string> {};

TEST_P(Parity, MatchesHuggingFaceOnTheCorpus) {
  const std::string variant = GetParam();
  auto tok = Tokenizer::load(fixture("tokenizer/models/" + variant));
  EXPECT_EQ(check_records(variant, *tok, expected_set(variant)), 0u);
}

// The same directories as transformers 5 (tokenizers 0.23) reads them
// (tools/gen_tokenizer_v5_fixtures.py): XLM-R's pipeline rebuilt from its class, and the newer
// Unicode case pairs of uncased WordPiece; the other sets are the files' own.
TEST_P(Parity, MatchesTransformers5OnTheCorpus) {
  const std::string variant = GetParam();
  auto tok = Tokenizer::load(fixture("tokenizer/models/" + variant), Compat::kTransformers5);
  const std::string set = expected_set(variant, "tokenizer/expected/transformers5/variants.tsv");
  EXPECT_EQ(check_records(variant, *tok, set), 0u);
  // Where transformers 5 gives other ids, the files' pipeline must not pass for it.
  if (set.starts_with("transformers5/")) {
    auto file = Tokenizer::load(fixture("tokenizer/models/" + variant), Compat::kFile);
    ::testing::TestPartResultArray failures;
    std::size_t mismatches = 0;
    {
      ::testing::ScopedFakeTestPartResultReporter quiet(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
      mismatches = check_records(variant, *file, set);
    }
    EXPECT_GT(mismatches, 0u) << variant << ": the file's pipeline gives transformers 5's ids";
  }
}

// The tokenizers of the families added on the current stack (tools/gen_family_tokenizers.py):
// saved by transformers 5 from MPNetTokenizer, ElectraTokenizer and CamembertTokenizer (their
// files hold the classes' pipelines) and ModernBERT's layout (a PreTrainedTokenizerFast over an
// NFC + byte-level BPE tokenizer.json), read as transformers 5 reads them.
class FamilyParity : public ::testing::TestWithParam<std::string> {};

TEST_P(FamilyParity, MatchesTransformers5) {
  const std::string variant = GetParam();
  const std::string set = expected_set(variant, "tokenizer/expected/families/variants.tsv");
  auto tok = Tokenizer::load(fixture("tokenizer/models/" + variant), Compat::kTransformers5);
  EXPECT_EQ(check_records(variant, *tok, set), 0u);
}

// The decoder-style embedders' tokenizers (tools/gen_decoder_tokenizers.py), saved by transformers
// 5 from Qwen2Tokenizer (Qwen3-Embedding: NFC, Split with Qwen2's regex, byte-level BPE,
// <|endoftext|> appended) and GemmaTokenizer (EmbeddingGemma: '▁' for spaces, BPE with byte
// fallback, <bos> A <eos>). Their files hold the classes' pipelines, so either reading gives
// transformers 5's ids.
class DecoderParity : public ::testing::TestWithParam<std::string> {};

TEST_P(DecoderParity, MatchesTransformers5) {
  const std::string variant = GetParam();
  const std::string set = expected_set(variant, "tokenizer/expected/decoders/variants.tsv");
  for (Compat compat : {Compat::kTransformers5, Compat::kFile}) {
    auto tok = Tokenizer::load(fixture("tokenizer/models/" + variant), compat);
    EXPECT_EQ(check_records(variant, *tok, set), 0u) << kCompatNames.name(compat);
  }
}

INSTANTIATE_TEST_SUITE_P(Decoders, DecoderParity, ::testing::Values("qwen2_json", "gemma_json"));

// DeBERTa-v2/v3 (tools/gen_deberta_tokenizers.py): spm.model and tokenizer.json directories as
// transformers 4.46 and 5 saved them, with and without do_lower_case and split_by_punct, each
// read as transformers 5 reads it and as its files say (transformers 4.46's fast tokenizer,
// tokenizers 0.20.3). Where the stacks give different ids, the other reading must fail the set.
class DebertaParity : public ::testing::TestWithParam<std::string> {};

constexpr const char* kDeberta5 = "tokenizer/expected/deberta/variants.tsv";
constexpr const char* kDebertaFile = "tokenizer/expected/deberta/variants_file.tsv";

void check_deberta(const std::string& variant, Compat compat) {
  const bool tf5 = compat == Compat::kTransformers5;
  const std::string set = expected_set(variant, tf5 ? kDeberta5 : kDebertaFile);
  const auto dir = fixture("tokenizer/models/" + variant);
  EXPECT_EQ(check_records(variant, *Tokenizer::load(dir, compat), set), 0u);
  if (set == expected_set(variant, tf5 ? kDebertaFile : kDeberta5)) return;
  auto other = Tokenizer::load(dir, tf5 ? Compat::kFile : Compat::kTransformers5);
  ::testing::TestPartResultArray failures;
  std::size_t mismatches = 0;
  {
    ::testing::ScopedFakeTestPartResultReporter quiet(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    mismatches = check_records(variant, *other, set);
  }
  EXPECT_GT(mismatches, 0u) << variant << ": the other stack's pipeline gives " << set;
}

TEST_P(DebertaParity, MatchesTransformers5) { check_deberta(GetParam(), Compat::kTransformers5); }

TEST_P(DebertaParity, MatchesTransformers4ReadingTheFiles) {
  check_deberta(GetParam(), Compat::kFile);
}

INSTANTIATE_TEST_SUITE_P(Deberta, DebertaParity,
                         ::testing::Values("deberta_json", "deberta_spm", "deberta_v3_spm",
                                           "deberta_tf4_json", "deberta_lower_punct_json",
                                           "deberta_lower_punct_spm", "deberta_identity_spm"));

INSTANTIATE_TEST_SUITE_P(Families, FamilyParity,
                         ::testing::Values("mpnet_json", "electra_json", "camembert_json",
                                           "modernbert_json"));

INSTANTIATE_TEST_SUITE_P(Tokenizers, Parity,
                         ::testing::Values("minilm_json", "minilm_vocab", "wp_cased_json",
                                           "wp_cased_vocab", "wp_uncased_json", "wp_uncased_vocab",
                                           "unigram_json", "unigram_spm", "bpe_json", "bpe_files"));

}  // namespace
}  // namespace mcinfer::tokenizer
