// Normalizers and pre-tokenizers on small inputs whose HF results follow from the definitions
// (checked against HF tokenizers 0.20.3 by hand); the corpus parity test covers the rest.

#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"

namespace mcinfer::tokenizer {
namespace {

using namespace std::string_view_literals;

std::string run(const Normalizer& n, std::string_view in) {
  std::string out;
  n.normalize(in, out);
  return out;
}

std::vector<std::string> words(const PreTokenizer& p, std::string_view in, bool at_origin = true) {
  Words w;
  p.split(in, at_origin, w);
  std::vector<std::string> out;
  for (std::size_t k = 0; k < w.spans.size(); ++k) out.emplace_back(w.word(k));
  return out;
}

TEST(Normalizer, BertCleansSplitsCjkStripsAndLowercases) {
  BertNormalizerOptions o;
  o.strip_accents = true;
  auto n = make_bert_normalizer(o);
  // NUL and \v (Cc) are dropped, \t becomes a space, CJK ideographs get spaces around.
  EXPECT_EQ(run(*n, "H\xC3\xA9llo\tW\xC3\x96RLD\x00\x0b\xE4\xB8\xAD"sv),
            "hello world \xE4\xB8\xAD ");
  EXPECT_EQ(run(*n, "\xC4\xB0stanbul"), "istanbul");  // NFD drops the dot before lowercasing
  // U+1885 was a letter in Unicode 8.0, so it survives accent stripping.
  EXPECT_EQ(run(*n, "a\xE1\xA2\x85"), "a\xE1\xA2\x85");
}

TEST(Normalizer, BertWithoutStripKeepsAccentsAndCombiningDot) {
  BertNormalizerOptions o;
  o.handle_chinese_chars = false;
  o.strip_accents = false;
  auto n = make_bert_normalizer(o);
  EXPECT_EQ(run(*n, "H\xC3\xA9llo \xC4\xB0"), "h\xC3\xA9llo i\xCC\x87");
}

TEST(Normalizer, ReplaceRunOfSpaces) {
  ReplacePattern p;
  ASSERT_TRUE(parse_replace_regex(" {2,}", p));
  auto n = make_replace(p, "\xE2\x96\x81");
  EXPECT_EQ(run(*n, "a  b   c d"),
            "a\xE2\x96\x81"
            "b\xE2\x96\x81"
            "c d");
  ASSERT_TRUE(parse_replace_regex("``", p));
  EXPECT_EQ(p.kind, ReplacePattern::Kind::kLiteral);
  EXPECT_FALSE(parse_replace_regex("(a|b)+", p));
  EXPECT_FALSE(parse_replace_regex("a*", p));  // may match the empty string
  EXPECT_FALSE(parse_replace_regex("\xff{2,}", p));
}

TEST(Normalizer, UnicodeFormsStripAndAccents) {
  EXPECT_EQ(run(*make_unicode_form(UnicodeForm::kNFKC), "\xEF\xAC\x81 \xEF\xBC\xA1"), "fi A");
  EXPECT_EQ(run(*make_strip(true, true), "\xE3\x80\x80 a b \t"), "a b");
  EXPECT_EQ(run(*make_strip_accents(),
                "e\xCC\x81"
                "a\xE0\xA4\x83"),
            "ea");
  EXPECT_EQ(run(*make_prepend("_"), ""), "");
  EXPECT_EQ(run(*make_prepend("_"), "x"), "_x");
}

TEST(Normalizer, PrecompiledRejectsMalformedBlobs) {
  EXPECT_THROW(PrecompiledCharsmap::parse("ab", "m"), Error);
  std::string blob("\x10\x00\x00\x00", 4);  // claims 16 bytes of trie
  EXPECT_THROW(PrecompiledCharsmap::parse(blob + "abcd", "m"), Error);
  std::string empty_trie("\x00\x00\x00\x00", 4);
  auto map = PrecompiledCharsmap::parse(empty_trie, "m");
  std::string out;
  map->normalize("abc \xC3\xA9", out);
  EXPECT_EQ(out, "abc \xC3\xA9");
}

TEST(PreTokenizer, Gpt2Split) {
  auto p = make_byte_level(false, true);
  using V = std::vector<std::string>;
  EXPECT_EQ(words(*p, "Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(words(*p, "  x"), (V{" ", " x"}));
  EXPECT_EQ(words(*p, "a\n\nb"), (V{"a", "\n", "\n", "b"}));
  EXPECT_EQ(words(*p, "x  "), (V{"x", "  "}));
  EXPECT_EQ(words(*p, "I'm it's 'S"), (V{"I", "'m", " it", "'s", " '", "S"}));
  EXPECT_EQ(words(*p, "a1b2 3.5"), (V{"a", "1", "b", "2", " 3", ".", "5"}));
  EXPECT_EQ(words(*p, "  hi  there "), (V{" ", " hi", " ", " there", " "}));
  EXPECT_EQ(words(*p, "\t\tword"), (V{"\t", "\t", "word"}));
  EXPECT_EQ(words(*make_byte_level(true, true), "x"), (V{" x"}));
}

TEST(PreTokenizer, BertAndMetaspace) {
  using V = std::vector<std::string>;
  EXPECT_EQ(words(*make_bert_pre_tokenizer(), "Hello, world!  ok?"),
            (V{"Hello", ",", "world", "!", "ok", "?"}));
  auto m = make_metaspace(0x2581, PrependScheme::kAlways, true);
  EXPECT_EQ(words(*m, "Hello  world"),
            (V{"\xE2\x96\x81Hello", "\xE2\x96\x81", "\xE2\x96\x81world"}));
  EXPECT_EQ(words(*m, " lead"), (V{"\xE2\x96\x81lead"}));
  EXPECT_EQ(words(*m, ""), V{});
  auto first = make_metaspace(0x2581, PrependScheme::kFirst, true);
  EXPECT_EQ(words(*first, "x", false), (V{"x"}));
  EXPECT_EQ(words(*first, "x", true), (V{"\xE2\x96\x81x"}));
}

}  // namespace
}  // namespace mcinfer::tokenizer
