// Whole-pipeline behaviour: special tokens, pairs, truncation rules, untrusted bytes, very
// long lines and concurrent use.

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "support/paths.h"
#include "tokenizer/tokenizer.h"

namespace mcinfer::tokenizer {
namespace {

using Ids = std::vector<std::int32_t>;

std::unique_ptr<Tokenizer> load(const std::string& variant) {
  return Tokenizer::load(testing::fixture("tokenizer/models/" + variant));
}

TEST(Encode, EmptyTextGivesSpecialTokensOnly) {
  EXPECT_EQ(load("minilm_json")->encode("", std::nullopt, 0).ids, (Ids{101, 102}));
  EXPECT_EQ(load("bpe_json")->encode("", std::nullopt, 0).ids, (Ids{0, 2}));
  EXPECT_EQ(load("unigram_spm")->encode("", std::nullopt, 0).ids, (Ids{0, 2}));
  auto pair = load("minilm_vocab")->encode("", std::string_view(""), 0);
  EXPECT_EQ(pair.ids, (Ids{101, 102, 102}));
  EXPECT_EQ(pair.type_ids, (Ids{0, 0, 1}));
}

TEST(Encode, PairsAndTypeIds) {
  auto bert = load("minilm_json")->encode("hello", std::string_view("world"), 0);
  EXPECT_EQ(bert.ids, (Ids{101, 7592, 102, 2088, 102}));
  EXPECT_EQ(bert.type_ids, (Ids{0, 0, 0, 1, 1}));
  auto roberta = load("bpe_files")->encode("a", std::string_view("b"), 0);
  ASSERT_EQ(roberta.ids.size(), 6u);
  EXPECT_EQ(roberta.ids[0], 0);
  EXPECT_EQ(roberta.ids[2], 2);
  EXPECT_EQ(roberta.ids[3], 2);  // </s></s> between the segments
  EXPECT_EQ(roberta.type_ids, Ids(6, 0));
}

TEST(Encode, TruncationFollowsHuggingFace) {
  auto tok = load("minilm_json");
  // "hello world foo bar" -> 7592 2088 29379 3347.
  EXPECT_EQ(tok->encode("hello world foo bar", std::nullopt, 4).ids, (Ids{101, 7592, 2088, 102}));
  EXPECT_TRUE(tok->encode("hello world foo bar", std::nullopt, 4).truncated);
  EXPECT_FALSE(tok->encode("hello world foo bar", std::nullopt, 6).truncated);
  EXPECT_EQ(tok->encode("hello world foo bar", std::nullopt, 2).ids, (Ids{101, 102}));
  // Below the number of special tokens HF's unsigned subtraction wraps: no truncation.
  EXPECT_EQ(tok->encode("hello world foo bar", std::nullopt, 1).ids.size(), 6u);
  // longest_first: 3 + 5 content tokens into 4 -> 2 + 2; into 5 -> 2 + 3 (B is longer).
  auto p = tok->encode("hello world foo", std::string_view("a b c d e"), 7);
  EXPECT_EQ(p.ids, (Ids{101, 7592, 2088, 102, 1037, 1038, 102}));
  p = tok->encode("hello world foo", std::string_view("a b c d e"), 8);
  EXPECT_EQ(p.ids, (Ids{101, 7592, 2088, 102, 1037, 1038, 1039, 102}));
  p = tok->encode("hello world foo", std::string_view("a b c d e"), 3);
  EXPECT_EQ(p.ids, (Ids{101, 102, 102}));
  p = tok->encode("hello world foo", std::string_view("a b c d e"), 2);  // 2 < 3 specials
  EXPECT_EQ(p.ids.size(), 11u);
  // Both longer than an odd budget: the longer one gets the extra token.
  p = tok->encode("a b c d e f", std::string_view("a b c d e f g"), 8);
  EXPECT_EQ(p.ids, (Ids{101, 1037, 1038, 102, 1037, 1038, 1039, 102}));
  p = tok->encode("a b c d e f g", std::string_view("a b c d e f"), 8);
  EXPECT_EQ(p.ids, (Ids{101, 1037, 1038, 1039, 102, 1037, 1038, 102}));
}

TEST(Encode, InvalidUtf8IsReplacedAndCounted) {
  auto tok = load("minilm_json");
  auto e = tok->encode("caf\xe9 \xff\xfe ok", std::nullopt, 0);
  EXPECT_EQ(e.invalid_utf8, 3u);
  // BERT's cleaning drops U+FFFD: what remains is "caf ok".
  EXPECT_EQ(e.ids, tok->encode("caf ok", std::nullopt, 0).ids);
  auto pair = tok->encode("\xc0", std::string_view("\xed\xa0\x80"), 0);
  EXPECT_EQ(pair.invalid_utf8, 4u);
}

TEST(Encode, SpecialTokensInsideText) {
  auto tok = load("minilm_json");
  EXPECT_EQ(tok->encode("a[MASK]b", std::nullopt, 0).ids, (Ids{101, 1037, 103, 1038, 102}));
  // Matched on the raw text only: the lowercase form is plain text.
  EXPECT_NE(tok->encode("[mask]", std::nullopt, 0).ids, (Ids{101, 103, 102}));
  auto bpe = load("bpe_json");
  auto ids = bpe->encode("a <mask>", std::nullopt, 0).ids;
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids[2], 4);  // <mask> takes the space before it (lstrip)
}

TEST(Encode, TenMegabyteLineIsFast) {
  std::string corpus = testing::read_file(testing::fixture("tokenizer/corpus.txt"));
  for (char& c : corpus) c = c == '\n' ? ' ' : c;
  std::string line;
  while (line.size() < (10u << 20)) line += corpus;
  line.resize(10u << 20);
  while ((static_cast<unsigned char>(line.back()) & 0xC0) == 0x80) line.pop_back();
  if (static_cast<unsigned char>(line.back()) >= 0xC0) line.pop_back();
  for (const char* variant : {"minilm_json", "wp_cased_json", "unigram_spm", "bpe_json"}) {
    auto tok = load(variant);
    auto t0 = std::chrono::steady_clock::now();
    auto e = tok->encode(line, std::nullopt, 512);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(e.ids.size(), 512u) << variant;
    EXPECT_TRUE(e.truncated) << variant;
    // The start does not depend on what follows (the prefix ends far from token 20).
    Ids prefix = tok->encode(line.substr(0, 4000), std::nullopt, 0).ids;
    ASSERT_GT(prefix.size(), 20u) << variant;
    EXPECT_EQ(Ids(e.ids.begin(), e.ids.begin() + 20), Ids(prefix.begin(), prefix.begin() + 20))
        << variant;
#if defined(NDEBUG) && !defined(MCINFER_SANITIZER_ADDRESS) && !defined(MCINFER_SANITIZER_THREAD)
    EXPECT_LT(seconds, 0.5) << variant;
#endif
    std::cout << variant << ": 10 MiB line to 512 tokens in " << seconds << " s\n";
  }
}

TEST(Encode, LongWordsStayLinear) {
  // One 4 MiB "word": no early exit is possible; the time must stay linear.
  std::string word(4u << 20, 'a');
  for (const char* variant : {"minilm_json", "unigram_json", "bpe_json"}) {
    auto tok = load(variant);
    auto t0 = std::chrono::steady_clock::now();
    auto e = tok->encode(word, std::nullopt, 512);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_FALSE(e.ids.empty());
#if defined(NDEBUG) && !defined(MCINFER_SANITIZER_ADDRESS) && !defined(MCINFER_SANITIZER_THREAD)
    EXPECT_LT(seconds, 2.0) << variant;
#endif
    std::cout << variant << ": 4 MiB word in " << seconds << " s\n";
  }
}

TEST(Encode, ConcurrentUseGivesTheSameIds) {
  std::string corpus = testing::read_file(testing::fixture("tokenizer/corpus.txt"));
  std::vector<std::string> lines;
  for (std::size_t start = 0; start < corpus.size();) {
    std::size_t end = corpus.find('\n', start);
    lines.push_back(corpus.substr(start, end - start));
    start = end + 1;
  }
  for (const char* variant : {"bpe_json", "unigram_json", "minilm_json"}) {
    auto tok = load(variant);
    std::vector<Ids> want;
    for (const auto& l : lines) want.push_back(tok->encode(l, std::nullopt, 0).ids);
    std::vector<std::thread> threads;
    std::vector<std::size_t> errors(4, 0);
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (std::size_t k = 0; k < lines.size(); ++k) {
          std::size_t i = (k * 7 + static_cast<std::size_t>(t) * 1013) % lines.size();
          errors[t] += tok->encode(lines[i], std::nullopt, 0).ids != want[i];
        }
      });
    }
    for (auto& th : threads) th.join();
    for (std::size_t e : errors) EXPECT_EQ(e, 0u) << variant;
  }
}

}  // namespace
}  // namespace mcinfer::tokenizer
