// The three models on hand-made vocabularies (expected ids follow from HF's algorithms), and
// the long-word strategies (rank-by-rank BPE, piecewise Viterbi) against the plain ones.

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/json.h"
#include "support/paths.h"
#include "tokenizer/model.h"

namespace mcinfer::tokenizer {
namespace {

using Ids = std::vector<std::int32_t>;

Ids run(const Model& m, std::string_view word, std::size_t limit = SIZE_MAX) {
  Ids ids;
  m.tokenize(word, ids, limit);
  return ids;
}

TEST(WordPiece, GreedyLongestMatchAndUnknownWords) {
  WordPieceOptions o;
  o.max_input_chars_per_word = 8;
  auto m = make_wordpiece({{"[UNK]", 0},
                           {"un", 1},
                           {"##aff", 2},
                           {"##able", 3},
                           {"u", 4},
                           {"##n", 5},
                           {"##a", 6},
                           {"a", 7}},
                          o, "test");
  EXPECT_EQ(run(*m, "unaffable"), (Ids{0}));  // 9 characters > 8
  o.max_input_chars_per_word = 100;
  m = make_wordpiece({{"[UNK]", 0},
                      {"un", 1},
                      {"##aff", 2},
                      {"##able", 3},
                      {"u", 4},
                      {"##n", 5},
                      {"##a", 6},
                      {"a", 7}},
                     o, "test");
  EXPECT_EQ(run(*m, "unaffable"), (Ids{1, 2, 3}));  // "un" beats "u" + "##n"
  EXPECT_EQ(run(*m, "unx"), (Ids{0}));              // one missing piece: the whole word
  EXPECT_EQ(run(*m, "aa"), (Ids{7, 6}));
  EXPECT_EQ(run(*m, ""), Ids{});
  EXPECT_THROW(make_wordpiece({{"a", 0}}, o, "test"), Error);  // no [UNK]
}

TEST(Bpe, MergesByRankThenPosition) {
  BpeOptions o;
  auto m = make_bpe({{"a", 0}, {"b", 1}, {"c", 2}, {"ab", 3}, {"bc", 4}, {"abc", 5}},
                    {{"b", "c"}, {"a", "b"}, {"a", "bc"}}, o, "test");
  EXPECT_EQ(run(*m, "abc"), (Ids{5}));  // b+c first (rank 0), then a+bc
  EXPECT_EQ(run(*m, "abab"), (Ids{3, 3}));
  // No unk token: an unknown character vanishes, and its neighbours then merge.
  EXPECT_EQ(run(*m, "axb"), (Ids{3}));
  o.has_unk = true;
  o.unk_token = "<unk>";
  o.fuse_unk = true;
  m = make_bpe({{"a", 0}, {"b", 1}, {"<unk>", 2}}, {}, o, "test");
  EXPECT_EQ(run(*m, "axyb"), (Ids{0, 2, 1}));
  o.fuse_unk = false;
  m = make_bpe({{"a", 0}, {"b", 1}, {"<unk>", 2}}, {}, o, "test");
  EXPECT_EQ(run(*m, "axyb"), (Ids{0, 2, 2, 1}));
  EXPECT_THROW(make_bpe({{"a", 0}}, {{"a", "b"}}, BpeOptions{}, "test"), Error);
}

TEST(Unigram, ViterbiAndUnknownFusion) {
  UnigramOptions o;
  o.unk_id = 0;
  auto m = make_unigram(
      {{"<unk>", 0.0}, {"a", -1.0}, {"b", -1.0}, {"ab", -1.5}, {"abc", -4.0}, {"c", -2.0}}, o,
      "test");
  EXPECT_EQ(run(*m, "ab"), (Ids{3}));
  EXPECT_EQ(run(*m, "abc"), (Ids{3, 5}));      // -3.5 beats -4
  EXPECT_EQ(run(*m, "axyb"), (Ids{1, 0, 2}));  // x and y fuse into one [UNK]
}

// The rank-by-rank and piecewise strategies for long words must give what the plain
// algorithms give, on a real vocabulary.
struct Fixture {
  Json json;
  std::string text;
};

Fixture fixture_model(const std::string& variant) {
  Fixture f;
  f.json = read_json_file(testing::fixture("tokenizer/models/" + variant + "/tokenizer.json"));
  std::string corpus = testing::read_file(testing::fixture("tokenizer/corpus.txt"));
  for (char c : corpus.substr(0, 200000)) {
    if (c != ' ' && c != '\n' && c != '\t') f.text.push_back(c);
  }
  return f;
}

TEST(Bpe, RankByRankEqualsHeapOnLongWords) {
  Fixture f = fixture_model("bpe_json");
  std::vector<std::pair<std::string, std::int32_t>> vocab;
  for (auto& [k, v] : f.json["model"]["vocab"].items())
    vocab.emplace_back(k, v.get<std::int32_t>());
  std::vector<std::pair<std::string, std::string>> merges;
  for (const auto& m : f.json["model"]["merges"]) {
    if (m.is_array()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      auto s = m.get<std::string>();
      merges.emplace_back(s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1));
    }
  }
  BpeOptions fast, plain;
  fast.byte_level_input = plain.byte_level_input = true;
  fast.long_word = 16;
  plain.long_word = SIZE_MAX;
  auto a = make_bpe(vocab, merges, fast, "fast");
  auto b = make_bpe(vocab, merges, plain, "plain");
  for (std::size_t len : {100u, 1000u, 5000u, 60000u}) {
    std::string_view word = std::string_view(f.text).substr(0, len);
    EXPECT_EQ(run(*a, word), run(*b, word)) << len;
  }
  std::string repeated(20000, 'a');
  EXPECT_EQ(run(*a, repeated), run(*b, repeated));
}

TEST(Unigram, PiecewiseEqualsOnePassOnLongWords) {
  Fixture f = fixture_model("unigram_json");
  std::vector<std::pair<std::string, double>> pieces;
  for (const auto& e : f.json["model"]["vocab"])
    pieces.emplace_back(e[0].get<std::string>(), e[1].get<double>());
  UnigramOptions split, whole;
  split.unk_id = whole.unk_id = f.json["model"]["unk_id"].get<std::int64_t>();
  split.long_word = 64;
  split.min_chunk = 1;
  whole.long_word = SIZE_MAX;
  auto a = make_unigram(pieces, split, "split");
  auto b = make_unigram(pieces, whole, "whole");
  for (std::size_t len : {100u, 1000u, 20000u, 150000u}) {
    std::string_view word = std::string_view(f.text).substr(0, len);
    while (!word.empty() && (static_cast<unsigned char>(word.back()) & 0xC0) == 0x80)
      word.remove_suffix(1);
    while (!word.empty() && static_cast<unsigned char>(word.back()) >= 0xC0) word.remove_suffix(1);
    EXPECT_EQ(run(*a, word), run(*b, word)) << len;
    // A limit only stops early: what is out is a prefix of the full result.
    Ids full = run(*b, word), part = run(*a, word, 50);
    ASSERT_GE(part.size(), std::min<std::size_t>(50, full.size()));
    EXPECT_TRUE(std::equal(full.begin(), full.begin() + std::min<std::size_t>(50, full.size()),
                           part.begin()));
  }
}

}  // namespace
}  // namespace mcinfer::tokenizer
