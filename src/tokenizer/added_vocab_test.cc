// Added tokens: HF's leftmost-longest matching, id assignment and strip rules.

#include "tokenizer/added_vocab.h"

#include <gtest/gtest.h>

#include <chrono>

#include "tokenizer/model.h"

namespace mcinfer::tokenizer {
namespace {

struct Split {
  std::string text;
  std::int32_t id;
  bool operator==(const Split&) const = default;
};

std::vector<Split> split(const AddedVocabulary& v, std::string_view text) {
  std::vector<Piece> pieces;
  v.split(text, false, pieces);
  std::vector<Split> out;
  for (const Piece& p : pieces)
    out.push_back({std::string(text.substr(p.start, p.end - p.start)), p.id});
  return out;
}

std::unique_ptr<Model> model() {
  return make_wordpiece({{"[UNK]", 0}, {"ab", 1}, {"bc", 2}}, WordPieceOptions{}, "test");
}

AddedToken raw(std::string content) {
  AddedToken t;
  t.content = std::move(content);
  t.normalized = false;
  return t;
}

TEST(AddedVocabulary, LeftmostLongestAndIds) {
  auto m = model();
  AddedVocabulary v;
  v.add_tokens({raw("ab"), raw("bc"), raw("abcd"), raw("new"), raw("other")}, *m, nullptr);
  EXPECT_EQ(v.find("ab"), 1);    // already in the vocabulary
  EXPECT_EQ(v.find("abcd"), 3);  // the vocabulary size
  EXPECT_EQ(v.find("new"), 4);   // then one after the largest id so far
  EXPECT_EQ(v.find("other"), 5);
  using S = std::vector<Split>;
  EXPECT_EQ(split(v, "xabcy"), (S{{"x", -1}, {"ab", 1}, {"cy", -1}}));  // leftmost wins over bc
  EXPECT_EQ(split(v, "abcd!"), (S{{"abcd", 3}, {"!", -1}}));            // longest at that start
  EXPECT_EQ(split(v, "abcabc"), (S{{"ab", 1}, {"c", -1}, {"ab", 1}, {"c", -1}}));
  EXPECT_EQ(split(v, ""), S{});
}

TEST(AddedVocabulary, StripAndSingleWord) {
  auto m = model();
  AddedToken mask = raw("<mask>");
  mask.lstrip = true;
  AddedToken end = raw("<end>");
  end.rstrip = true;
  AddedToken word = raw("hi");
  word.single_word = true;
  AddedVocabulary v;
  v.add_tokens({mask, end, word}, *m, nullptr);
  using S = std::vector<Split>;
  EXPECT_EQ(split(v, "a  <mask> b"), (S{{"a", -1}, {"  <mask>", 3}, {" b", -1}}));
  EXPECT_EQ(split(v, "<end>  x"), (S{{"<end>  ", 4}, {"x", -1}}));
  EXPECT_EQ(split(v, "hi chip hi!"), (S{{"hi", 5}, {" chip ", -1}, {"hi", 5}, {"!", -1}}));
}

TEST(AddedVocabulary, LinearOnHostileContents) {
  // A forward trie walk from every position would take 200k x 5k steps here.
  auto m = model();
  AddedVocabulary v;
  v.add_tokens({raw("a"), raw(std::string(5000, 'a') + "b")}, *m, nullptr);
  std::string text(200000, 'a');
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Piece> pieces;
  v.split(text, false, pieces);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(pieces.size(), text.size());
  EXPECT_LT(seconds, 1.0);
}

}  // namespace
}  // namespace mcinfer::tokenizer
