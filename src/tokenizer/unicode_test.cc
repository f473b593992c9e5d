// Unicode tables and algorithms against the Unicode standard (UAX #15 normalization, UAX #29
// grapheme clusters) and the version quirks HF tokenizers has.

#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

namespace mcinfer::tokenizer::unicode {
namespace {

std::u32string nfd(std::u32string_view s) {
  std::u32string out;
  decompose(s, false, out);
  return out;
}
std::u32string nfc(std::u32string_view s) {
  std::u32string out;
  decompose(s, false, out);
  compose_in_place(out);
  return out;
}
std::u32string nfkc(std::u32string_view s) {
  std::u32string out;
  decompose(s, true, out);
  compose_in_place(out);
  return out;
}

TEST(Unicode, CanonicalDecompositionAndOrdering) {
  EXPECT_EQ(nfd(U"\u00E9"), U"e\u0301");
  EXPECT_EQ(nfd(U"\u1E69"), U"s\u0323\u0307");         // recursive
  EXPECT_EQ(nfd(U"a\u0301\u0323"), U"a\u0323\u0301");  // ccc 230 after 220
  EXPECT_EQ(nfd(U"\uAC01"), U"\u1100\u1161\u11A8");    // Hangul LVT
  EXPECT_EQ(nfd(U"\uF900"), U"\u8C48");                // CJK compatibility ideograph
  EXPECT_EQ(nfd(U"\uFB01"), U"\uFB01");                // compatibility only
}

TEST(Unicode, Composition) {
  EXPECT_EQ(nfc(U"e\u0301"), U"\u00E9");
  EXPECT_EQ(nfc(U"e\u0301\u0327"), U"\u0229\u0301");  // cedilla (202) composes first
  EXPECT_EQ(nfc(U"\u1100\u1161\u11A8"), U"\uAC01");
  EXPECT_EQ(nfc(U"\u0958"), U"\u0915\u093C");  // composition exclusion
  EXPECT_EQ(nfkc(U"\uFB01\uFF21\u2460\uFF76\uFF9E"), U"fiA1\u30AC");
}

TEST(Unicode, Lowercase) {
  std::u32string out;
  append_lower(U'\u0130', out);  // full mapping, no context (Rust's to_lowercase)
  EXPECT_EQ(out, U"i\u0307");
  out.clear();
  append_lower(U'\u03A3', out);  // never the final-sigma form
  EXPECT_EQ(out, U"\u03C3");
  out.clear();
  append_lower(U'\u01C5', out);
  EXPECT_EQ(out, U"\u01C6");
}

TEST(Unicode, VersionQuirksOfHuggingFace) {
  // unicode_categories 0.1.1 is Unicode 8.0: U+1885 was Lo then (Mn since 9.0), U+166D was Po.
  EXPECT_FALSE(prop(0x1885) & kMn8);
  EXPECT_TRUE(prop(0x1885) & kMark9);
  EXPECT_TRUE(prop(0x166D) & kBertPunct);
  // Control: Cc, Cf, Co of 8.0; tab, newline, carriage return are whitespace instead.
  EXPECT_TRUE(prop(0x200B) & kBertControl);
  EXPECT_TRUE(prop(0xE000) & kBertControl);
  EXPECT_FALSE(prop('\t') & kBertControl);
  EXPECT_TRUE(prop('\t') & kWhiteSpace);
  // BERT's CJK ranges include HF's 0x2B920 start, not the 0x2B820 of the original BERT.
  EXPECT_FALSE(prop(0x2B820) & kChinese);
  EXPECT_TRUE(prop(0x2B920) & kChinese);
  EXPECT_TRUE(prop(0x4E2D) & kChinese);
}

std::size_t cluster(const std::u32string& s) {
  std::string utf8;
  for (char32_t c : s) {
    if (c < 0x80) {
      utf8.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      utf8.push_back(static_cast<char>(0xC0 | (c >> 6)));
      utf8.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      utf8.push_back(static_cast<char>(0xE0 | (c >> 12)));
      utf8.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      utf8.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      utf8.push_back(static_cast<char>(0xF0 | (c >> 18)));
      utf8.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      utf8.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      utf8.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  std::size_t bytes = grapheme_length(utf8, 0);
  // Count code points in the first cluster.
  std::size_t n = 0;
  for (std::size_t i = 0; i < bytes; ++i) n += (static_cast<unsigned char>(utf8[i]) & 0xC0) != 0x80;
  return n;
}

TEST(Unicode, GraphemeClusters) {
  EXPECT_EQ(cluster(U"ab"), 1u);
  EXPECT_EQ(cluster(U"\r\nx"), 2u);                           // GB3
  EXPECT_EQ(cluster(U"\n\u0301"), 1u);                        // GB4
  EXPECT_EQ(cluster(U"e\u0301\u0302x"), 3u);                  // GB9
  EXPECT_EQ(cluster(U"\u1100\u1161\u11A8\u1100"), 3u);        // GB6-8
  EXPECT_EQ(cluster(U"\U0001F469\u200D\U0001F4BB!"), 3u);     // GB11
  EXPECT_EQ(cluster(U"a\u200D\U0001F4BB"), 2u);               // ZWJ after non-emoji
  EXPECT_EQ(cluster(U"\U0001F1EB\U0001F1F7\U0001F1EF"), 2u);  // GB12: flags pair up
  EXPECT_EQ(cluster(U"\u0600a"), 2u);                         // GB9b prepend
  EXPECT_EQ(cluster(U"\u0915\u094D\u0937x"), 3u);             // GB9c conjunct
  EXPECT_EQ(cluster(U"a\u0903"), 2u);                         // GB9a spacing mark
}

}  // namespace
}  // namespace mcinfer::tokenizer::unicode
